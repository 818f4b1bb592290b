'use client';

import { useEffect, useRef } from 'react';

/**
 * While `isActive`, something on the page would be lost by leaving it: a reload or closing the tab asks
 * through the browser's own prompt, and a click on a link elsewhere on the page is held back and handed to
 * `onLinkBlocked` (with the link's href) so the page can ask in its own dialog and follow it afterwards.
 * Links inside `container` (the thing being protected) are left alone.
 */
export function useUnsavedGuard(isActive: boolean, onLinkBlocked: (href: string) => void, container?: React.RefObject<HTMLElement | null>) {
  const callback = useRef(onLinkBlocked);
  callback.current = onLinkBlocked;

  useEffect(() => {
    if (!isActive) return;
    const onBeforeUnload = (event: BeforeUnloadEvent) => {
      event.preventDefault();
      // Older Chromium shows the prompt only when returnValue is set.
      event.returnValue = '';
    };
    // Capture on the document runs before React's listeners on its root, so Next's <Link> never sees the click.
    const onClick = (event: MouseEvent) => {
      if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      const link = (event.target as Element | null)?.closest?.('a[href]') as HTMLAnchorElement | null;
      if (!link || link.target === '_blank' || link.hasAttribute('download')) return;
      if (container?.current?.contains(link)) return;
      // In-page anchors (the skip link) leave nothing behind.
      if (link.getAttribute('href')?.startsWith('#')) return;
      event.preventDefault();
      event.stopPropagation();
      callback.current(link.href);
    };
    window.addEventListener('beforeunload', onBeforeUnload);
    document.addEventListener('click', onClick, true);
    return () => {
      window.removeEventListener('beforeunload', onBeforeUnload);
      document.removeEventListener('click', onClick, true);
    };
  }, [isActive, container]);
}

/**
 * Offers `text` as a download named `fileName`, from memory: nothing is sent anywhere. Octet-stream, because
 * Chromium adds `.txt` to the name of a text/plain download.
 */
export function downloadText(fileName: string, text: string) {
  const url = URL.createObjectURL(new Blob([text], { type: 'application/octet-stream' }));
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  link.style.display = 'none';
  document.body.append(link);
  link.click();
  link.remove();
  // The click has started the download by now; the object URL is not needed after it.
  setTimeout(() => URL.revokeObjectURL(url), 1_000);
}
