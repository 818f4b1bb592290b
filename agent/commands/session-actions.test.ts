import { describe, expect, it } from 'vitest';
import { SessionActions } from './session-actions';

describe('SessionActions', () => {
  it("hands a request to the loop, and the loop's finish returns once the command was answered", async () => {
    let answered = () => {};
    const answer = new Promise<void>((resolve) => (answered = resolve));
    const actions = new SessionActions(() => answer);
    let waited = false;
    void actions.wait().then(() => (waited = true));
    const output = actions.request('renew');
    await Promise.resolve();
    expect(waited).toBe(true);
    const taken = actions.take()!;
    expect(taken.action).toBe('renew');
    expect(actions.take()).toBeUndefined();
    let finished = false;
    const finish = taken.finish({ output: { serial: '01' } }).then(() => (finished = true));
    expect(await output).toEqual({ serial: '01' });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(finished).toBe(false);
    answered();
    await finish;
    expect(finished).toBe(true);
  });

  it('reports the error to the runner, and drops a request whose time ran out before the loop took it', async () => {
    const actions = new SessionActions(async () => {});
    const failing = actions.request('refresh');
    await actions.take()!.finish({ error: 'could not open a new session: ECONNREFUSED' });
    await expect(failing).rejects.toThrow('could not open a new session: ECONNREFUSED');
    const controller = new AbortController();
    const late = actions.request('renew', controller.signal);
    controller.abort();
    await expect(late).rejects.toThrow('the session loop did not renew in time');
    expect(actions.take()).toBeUndefined();
  });
});
