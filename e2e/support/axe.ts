import AxeBuilder from '@axe-core/playwright';
import { expect, type Page } from '@playwright/test';

const SERIOUS = ['serious', 'critical'];

/** axe-core's violations on the page at the given impacts, each named by rule, help and up to three of its elements. */
export async function axeViolations(page: Page, impacts: readonly string[] = SERIOUS): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => impacts.includes(v.impact ?? ''))
    .map(
      (v) =>
        `${v.id} (${v.impact}): ${v.help} — ${v.nodes
          .map((n) => n.target.join(' '))
          .slice(0, 3)
          .join(', ')}`,
    );
}

/**
 * axe-core on the page: no serious or critical violation. With `screenshots`, the page also leaves a full-page
 * screenshot `<screenshots>/<name>.png`, for a person to look at.
 */
export async function expectNoSeriousViolations(page: Page, name: string, options: { screenshots?: string } = {}) {
  expect(await axeViolations(page), `axe violations on ${name}`).toEqual([]);
  if (options.screenshots) await page.screenshot({ path: `${options.screenshots}/${name}.png`, fullPage: true });
}

/** axe-core on the page: no serious or critical violation (listed by rule id). */
export async function expectAccessible(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  expect(results.violations.filter((v) => SERIOUS.includes(v.impact ?? '')).map((v) => v.id)).toEqual([]);
}
