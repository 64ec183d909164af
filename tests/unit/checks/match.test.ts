/** The stop gate counts a check by what ran, not by its exact text. */
import { describe, expect, it } from 'vitest';
import { checksCovered } from '../../../src/checks/match.js';

const CHECKS = ['python3 -m unittest -v', 'python3 tools/style.py'];

describe('checks a command ran', () => {
  it('the printed check line joined with && runs both', async () => {
    expect(await checksCovered('python3 -m unittest -v && python3 tools/style.py', CHECKS, true)).toEqual(CHECKS);
  });

  it('the same words with other spacing or quoting are the same check', async () => {
    expect(await checksCovered('make  lint', ['make lint'], false)).toEqual(['make lint']);
    expect(await checksCovered('\'make\' "lint"', ['make lint'], true)).toEqual(['make lint']);
    expect(await checksCovered('make lint 2>&1 | tail -n 50', ['make lint'], true)).toEqual(['make lint']);
  });

  it('a failed chain counts the check it started with, not the ones an early failure skipped', async () => {
    expect(await checksCovered('python3 -m unittest -v && python3 tools/style.py', CHECKS, false)).toEqual(['python3 -m unittest -v']);
  });

  it('other arguments, another program, or the check only in $(...) do not count', async () => {
    expect(await checksCovered('python3 -m unittest', CHECKS, true)).toEqual([]);
    expect(await checksCovered('make lint-fix', ['make lint'], true)).toEqual([]);
    expect(await checksCovered('echo make lint', ['make lint'], true)).toEqual([]);
    expect(await checksCovered('echo "$(make lint)"', ['make lint'], true)).toEqual([]);
    expect(await checksCovered('make lint &', ['make lint'], true)).toEqual([]);
  });

  it('a check with several commands must run whole and in order', async () => {
    expect(await checksCovered('npm ci && npm test', ['npm ci && npm test'], true)).toEqual(['npm ci && npm test']);
    expect(await checksCovered('npm test', ['npm ci && npm test'], true)).toEqual([]);
    expect(await checksCovered('npm test && npm ci', ['npm ci && npm test'], true)).toEqual([]);
  });

  it('a check that is not valid shell still counts when typed exactly', async () => {
    expect(await checksCovered('weird "unterminated', ['weird "unterminated'], true)).toEqual(['weird "unterminated']);
  });
});
