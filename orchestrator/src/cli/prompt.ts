// Questions to the operator (typed-name confirmations, "apply this update?").
// Only asked on a terminal: in scripts the flags (--confirm NAME, --yes) answer.

import { createInterface } from 'node:readline/promises';

export interface Prompt {
  /** Whether stdin and stderr are a terminal, so a question can be answered. */
  readonly interactive: boolean;
  /** Shows `question` on stderr and returns the typed line (trimmed). */
  ask(question: string): Promise<string>;
}

export function terminalPrompt(): Prompt {
  return {
    interactive: process.stdin.isTTY === true && process.stderr.isTTY === true,
    async ask(question) {
      const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
      try {
        return (await rl.question(question)).trim();
      } finally {
        rl.close();
      }
    },
  };
}

/** No terminal: every question must be answered by a flag instead. */
export const noPrompt: Prompt = {
  interactive: false,
  ask: () => Promise.reject(new Error('no terminal to ask on')),
};

/** A terminal that answers from a list (tests); records the questions. */
export function scriptedPrompt(answers: string[]): Prompt & { questions: string[] } {
  const questions: string[] = [];
  return {
    interactive: true,
    questions,
    ask: async (q) => {
      questions.push(q);
      return answers.shift() ?? '';
    },
  };
}
