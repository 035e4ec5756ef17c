/**
 * Turns as Messages wants them (docs/protocols.md#chat-to-messages): no empty turns,
 * strict user/assistant alternation, the user first, and within a turn the blocks Messages expects
 * at its start (tool results, thinking) moved there.
 */
import { invalid } from './fields';
import { textBlock, type Block, type TurnContent } from './blocks';

export interface Turn {
  readonly role: 'user' | 'assistant';
  readonly content: TurnContent;
}

export interface Conversation {
  /** The system prompt: every instruction, system and developer text, in order; empty when there were none. */
  readonly system: Block[];
  readonly messages: Turn[];
}

/** For each role, the block types Messages wants at the start of its turn, in no particular order. */
type FirstKinds = Readonly<Record<Turn['role'], readonly string[]>>;

/** How one client protocol normalises its turns. */
export interface TurnRules {
  readonly firstKinds: FirstKinds;
  /** The field and the problem a 400 names when no turn has content. */
  readonly emptyParam: string;
  readonly emptyProblem: string;
}

/**
 * What opens a conversation the client started with an assistant turn (a greeting, say): Messages
 * wants the first turn to be the user's, and a neutral marker adds nothing the model could answer.
 */
const OPENING_USER_TEXT = '(continued)';

/** Drops empty turns, merges neighbours of one role, and makes the user speak first. */
export function normalisedTurns(turns: readonly Turn[], rules: TurnRules): Turn[] {
  const merged = mergeSameRole(turns.filter((turn) => turn.content.length > 0)).map((turn) => kindsFirst(turn, rules.firstKinds[turn.role]));
  if (merged.length === 0) throw invalid(rules.emptyParam, rules.emptyProblem);
  if (merged[0].role === 'assistant') merged.unshift({ role: 'user', content: [textBlock(OPENING_USER_TEXT)] });
  return merged;
}

/**
 * Consecutive turns of one role become one turn: parallel tool calls share an assistant turn, and a
 * run of tool results (with any user text right after them) answers them in a single user turn.
 */
function mergeSameRole(turns: readonly Turn[]): Turn[] {
  const merged: Turn[] = [];
  // The run of one role being merged: its blocks are appended in place, never copied again, so a
  // run of n turns costs O(n) rather than the O(n²) of rebuilding the merged turn at each step.
  let run: Block[] | null = null;
  for (const turn of turns) {
    const previous = merged.at(-1);
    if (previous?.role !== turn.role) {
      merged.push(turn);
      run = null;
      continue;
    }
    if (run === null) {
      run = [...asBlocks(previous.content)];
      merged[merged.length - 1] = { role: turn.role, content: run };
    }
    for (const block of asBlocks(turn.content)) run.push(block);
  }
  return merged;
}

/** Content as blocks, for merging two turns of the same role. */
export function asBlocks(content: TurnContent): Block[] {
  return typeof content === 'string' ? [textBlock(content)] : content;
}

/**
 * Moves blocks of `kinds` to the front of a merged turn; the order within each group is kept. A user
 * turn with text before its tool results is rejected, and thinking comes before what it led to.
 */
function kindsFirst(turn: Turn, kinds: readonly string[]): Turn {
  if (typeof turn.content === 'string') return turn;
  const isFirst = (block: Block): boolean => kinds.includes(String(block.type));
  const first = turn.content.filter(isFirst);
  if (first.length === 0 || first.length === turn.content.length) return turn;
  return { role: turn.role, content: [...first, ...turn.content.filter((block) => !isFirst(block))] };
}
