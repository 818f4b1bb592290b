'use client';

import { useEffect, useRef } from 'react';
import { isTypingTarget } from '@/lib/join-request-queue';

interface QueueKeys {
  /** j and k: the next and the previous row. */
  onMove: (by: 1 | -1) => void;
  /** x: tick the current row. */
  onToggle: () => void;
  onDecide: (action: 'approve' | 'reject') => void;
  onHelp: () => void;
}

/** The queue's shortcuts, on the page but not while typing in a field or with a modifier held. */
export function useQueueKeys(handlers: QueueKeys) {
  const keys = useRef(handlers);
  useEffect(() => {
    keys.current = handlers;
  });
  useEffect(() => {
    const listener = (event: KeyboardEvent) => {
      if (event.metaKey || event.ctrlKey || event.altKey || isTypingTarget(event.target)) return;
      const on = keys.current;
      if (event.key === 'j') on.onMove(1);
      else if (event.key === 'k') on.onMove(-1);
      else if (event.key === 'x') on.onToggle();
      else if (event.key === 'a') on.onDecide('approve');
      else if (event.key === 'r') on.onDecide('reject');
      else if (event.key === '?') on.onHelp();
      else return;
      event.preventDefault();
    };
    document.addEventListener('keydown', listener);
    return () => document.removeEventListener('keydown', listener);
  }, []);
}
