import type { Page } from '@playwright/test';

/**
 * What is wrong with the layout of the page as it is now, in words (an empty list when nothing is):
 *  - the page is wider than the viewport (it scrolls sideways);
 *  - a table row is taller than a few lines (max(120 px, 4 line heights)): a column squeezed to a sliver;
 *  - a control (button, link, field) is cut off: outside the viewport, or outside the box of an ancestor that
 *    clips (overflow hidden or clip). Inside a scroll box, a control must be in view without scrolling at a
 *    desktop width (`wide`), and within the box's scrollable extent on a phone;
 *  - on a phone, the closed nav is taller than one row (the Menu button).
 */
export async function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = [];
    const viewport = document.documentElement.clientWidth;
    const wide = viewport >= 1024;
    const describe = (el: Element) => {
      const classes = typeof el.className === 'string' && el.className.trim() ? `.${el.className.trim().split(/\s+/).join('.')}` : '';
      const name = (el.getAttribute('aria-label') ?? el.textContent ?? '').trim().replace(/\s+/g, ' ').slice(0, 50);
      return `${el.tagName.toLowerCase()}${classes} “${name}”`;
    };
    const pageWidth = document.documentElement.scrollWidth;
    if (pageWidth > viewport + 1) problems.push(`the page is ${pageWidth} px wide in a ${viewport} px viewport`);

    for (const row of document.querySelectorAll('tbody tr')) {
      const box = row.getBoundingClientRect();
      if (box.height === 0) continue;
      const lineHeight = Number.parseFloat(getComputedStyle(row).lineHeight) || 20;
      const limit = Math.max(120, 4 * lineHeight);
      if (box.height > limit) problems.push(`a table row is ${Math.round(box.height)} px tall (at most ${limit}): ${describe(row)}`);
    }

    const controls = document.querySelectorAll('button, a[href], input:not([type="hidden"]), select, textarea, [role="button"]');
    for (const el of controls) {
      const box = el.getBoundingClientRect();
      // Not rendered, or visually hidden (a 1 px clip) on purpose.
      if (box.width <= 1 || box.height <= 1 || getComputedStyle(el).visibility === 'hidden') continue;
      if (el.closest('dialog:not([open])')) continue;
      let clipper: Element | null = null;
      for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
        if (getComputedStyle(up).overflowX !== 'visible') {
          clipper = up;
          break;
        }
      }
      if (!clipper) {
        if (box.left < -1 || box.right > viewport + 1)
          problems.push(`${describe(el)} is outside the viewport (${Math.round(box.left)}–${Math.round(box.right)} px)`);
        continue;
      }
      const clip = clipper.getBoundingClientRect();
      const overflow = getComputedStyle(clipper).overflowX;
      const scrolls = overflow === 'auto' || overflow === 'scroll';
      const left = scrolls && !wide ? clip.left - clipper.scrollLeft : clip.left;
      const right = scrolls && !wide ? left + clipper.scrollWidth : clip.right;
      if (box.left < left - 1 || box.right > right + 1) {
        problems.push(`${describe(el)} is cut off by ${scrolls ? 'the scroll box' : 'the clipping box'} ${describe(clipper).slice(0, 60)}`);
      }
    }

    const nav = document.querySelector('nav[aria-label="Console"]');
    if (!wide && nav && !nav.hasAttribute('data-open') && nav.getBoundingClientRect().height > 60) {
      problems.push(`the closed nav is ${Math.round(nav.getBoundingClientRect().height)} px tall on a phone`);
    }
    return problems;
  });
}

/** The problems of one page in short: alike ones (differing only in names and sizes) once, the first as example, with their count. */
export function summarize(problems: string[]): string[] {
  const groups = new Map<string, { example: string; n: number }>();
  for (const problem of problems) {
    const key = problem.replace(/“[^”]*”/g, '“…”').replace(/\d+/g, 'N');
    const group = groups.get(key);
    if (group) group.n += 1;
    else groups.set(key, { example: problem, n: 1 });
  }
  return [...groups.values()].map(({ example, n }) => (n > 1 ? `${example} (and ${n - 1} alike)` : example));
}
