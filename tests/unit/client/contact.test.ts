/**
 * A live view across a server restart. `kiln wait` holds one long poll (the run's result) that
 * returns only when the run ends: the view must still say it is back as soon as the server is.
 */
import { describe, expect, it } from 'vitest';
import { Contact, LostContactError } from '../../../src/client/runs.js';

const unavailable = () => Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 });

describe('Contact', () => {
  it('says it reconnected when the server answers again, before the long poll returns', async () => {
    let down = true;
    let finish: (v: string) => void = () => undefined;
    const lines: string[] = [];
    const contact = new Contact('r1', (l) => lines.push(l));
    const longPoll = () => (down ? Promise.reject(unavailable()) : new Promise<string>((r) => (finish = r)));
    const probe = () => (down ? Promise.reject(unavailable()) : Promise.resolve());
    const result = contact.keep(longPoll, probe);
    await new Promise((r) => setTimeout(r, 200));
    expect(lines).toEqual([expect.stringMatching(/lost contact with the Temporal server; retrying for up to 5 min/)]);
    down = false;
    await expect.poll(() => lines.length, { timeout: 5000 }).toBe(2);
    expect(lines[1]).toMatch(/reconnected to the Temporal server after \d+ s/);
    finish('succeeded');
    await expect(result).resolves.toBe('succeeded');
    expect(lines).toHaveLength(2);
  });

  it('gives up after its limit with the command that re-attaches, and rethrows what is not a lost server', async () => {
    const contact = new Contact('r2', () => undefined, 300);
    await expect(contact.keep(() => Promise.reject(unavailable()))).rejects.toThrow(LostContactError);
    await expect(contact.keep(() => Promise.reject(unavailable()))).rejects.toThrow(/re-attach with `kiln wait r2`/);
    const bad = new Error('3 INVALID_ARGUMENT: namespace is wrong');
    await expect(new Contact('r3', () => undefined).keep(() => Promise.reject(bad))).rejects.toBe(bad);
  });
});
