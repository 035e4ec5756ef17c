/** The repository's Dockerfile read as instructions, so tests can check and replay its runtime stage. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths';

export const DOCKERFILE = path.join(PACKAGE_ROOT, 'Dockerfile');

export interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** Every instruction, continuation lines joined and comments dropped. */
export function readDockerfile(text = readFileSync(DOCKERFILE, 'utf8')): Instruction[] {
  const joined = text.replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const space = line.search(/\s/);
      return { keyword: line.slice(0, space).toUpperCase(), args: line.slice(space + 1).trim() };
    });
}

/** The instructions of the last stage (after its FROM): what the image runs. */
export function runtimeStage(instructions: readonly Instruction[]): Instruction[] {
  const from = instructions.map((instruction) => instruction.keyword).lastIndexOf('FROM');
  return instructions.slice(from + 1);
}

/** The exec-form array of a CMD or HEALTHCHECK … CMD instruction. */
export function execForm(args: string): string[] {
  const start = args.indexOf('[');
  return JSON.parse(args.slice(start)) as string[];
}
