/** The Web UI's Current Details keep their structure once rendered as markdown. */
import { describe, expect, it } from 'vitest';
import { detailsMarkdown } from '../../../src/workflows/details.js';
import { initialState } from '../../../src/workflows/machine.js';
import { testInput } from '../../helpers/run-input.js';

describe('Current Details', () => {
  it('sections apart, the plan a checklist, a many-line reason with hard breaks', () => {
    const s = initialState(testInput({ repo: '/r', model: 'scripted:/s.json' }));
    s.phase = 'blocked';
    s.reason = 'checks failed:\nFAIL: test_add (test_calc.CalcTest.test_add)';
    s.plan = [
      { step: 'Find the bug', status: 'done' },
      { step: 'Fix it', status: 'in_progress' },
    ];
    const md = detailsMarkdown(s);
    // markdown joins lines separated by a single newline into one paragraph
    expect(md.split('\n\n')).toEqual([
      expect.stringMatching(/^\*\*blocked\*\* · attempt 1\/\d+ · turn 0/),
      'reason: checks failed:  \nFAIL: test_add (test_calc.CalcTest.test_add)',
      'plan:',
      '- [x] Find the bug\n- [ ] Fix it',
    ]);
  });
});
