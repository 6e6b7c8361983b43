/**
 * The extractor corpus: replies and the answer each must yield (undefined: no answer), written by
 * hand as the statement of what the extractors accept. `q36-eval --self-test-extractors` and
 * test/eval.test.ts run it.
 */
import { extractAnswer } from './extract.js';
import type { AnswerFormat } from './questions.js';

export interface CorpusCase { format: AnswerFormat; reply: string; thinking: boolean; letters?: number; want: string | undefined }

const L = (reply: string, want: string | undefined, thinking = true, letters = 4): CorpusCase => ({ format: 'letter', reply, thinking, letters, want });
const I = (reply: string, want: string | undefined, thinking = true): CorpusCase => ({ format: 'integer', reply, thinking, want });

export const EXTRACTOR_CORPUS: CorpusCase[] = [
  // letters, in the phrasings models use
  L('Let me think.\n</think>\n\nAnswer: C', 'C'),
  L('hmm</think>The answer is (B).', 'B'),
  L('</think>**Answer:** D', 'D'),
  L('</think>\n**Final answer: A**', 'A'),
  L('</think>Final answer: option A', 'A'),
  L('</think>So: $\\boxed{C}$', 'C'),
  L('</think>I believe it is the third one.\n\nC', 'C'),
  L('</think>\n(B)\n', 'B'),
  L('</think>Answer: B) 0.63', 'B'),
  L('</think>Answer: E', undefined, true, 4),
  L('</think>Answer: (E)', 'E', true, 6),
  L('</think>Answer: A. Actually no.\nAnswer: D', 'D'),
  // only what follows the last </think> counts; an unclosed think block has no answer
  L('Answer: A</think>\n\nAnswer: C', 'C'),
  L('I would say Answer: B but I keep thinking', undefined),
  L('</think>I do not know.', undefined),
  L('</think>', undefined),
  // without thinking the whole reply is the answer text
  L('The answer is B.', 'B', false),
  L('Answer: A', 'A', false),
  // integers: boxed, signs, leading zeros, separators, last line
  I('</think>Answer: 70', '70'),
  I('</think>\\boxed{042}', '42'),
  I('</think>The final answer is 007.', '7'),
  I('</think>Answer: -12', '-12'),
  I('</think>Answer: +5', '5'),
  I('</think>Answer: -0', '0'),
  I('</think>Answer: 1,024', '1024'),
  I('</think>So the total is\n\n336', '336'),
  I('</think>Answer: x = 5', '5'),
  I('</think>Answer: 12 apples', '12'),
  I('</think>$\\boxed{\\text{84}}$', '84'),
  I('</think>Answer: 3.5', undefined),
  I('</think>Answer: line 14', '14'),
  I('</think>Answer: 0', '0'),
  I('</think>\\boxed{7} and later the answer is 9', '9'),
  I('working... Answer: 5', undefined),
  I('Answer: 5</think>\nAnswer: 6', '6'),
  I('</think>no idea', undefined),
  I('The answer is 44.', '44', false),
];

/** The cases that fail, described; empty when the extractors behave as stated. */
export function runCorpus(cases: CorpusCase[]): string[] {
  const fails: string[] = [];
  for (const c of cases) {
    const got = extractAnswer(c.format, c.reply, c.thinking, c.letters);
    if (got !== c.want) fails.push(`${c.format} ${JSON.stringify(c.reply)}${c.thinking ? '' : ' (no thinking)'}: got ${got ?? 'no answer'}, want ${c.want ?? 'no answer'}`);
  }
  return fails;
}
