/**
 * The Responses `instructions` and `input` list as a Messages `system` prompt and alternating
 * user/assistant turns (docs/protocols.md#responses-to-messages).
 */
import type { Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { nonEmptyText, textBlock, type Block } from '../to-messages/blocks';
import { invalid, isSet, requireArray, requireRecord, requireString } from '../to-messages/fields';
import { asBlocks, normalisedTurns, type Conversation, type Turn, type TurnRules } from '../to-messages/turns';
import { contentBlocks } from './content';
import { thinkingBlocks, toolResultBlock, toolUseBlock } from './items';

/** What one input item contributes: system text, a turn's blocks, signed reasoning to carry over, or nothing. */
type ItemPiece =
  | { readonly kind: 'none' }
  | { readonly kind: 'system'; readonly blocks: Block[] }
  | { readonly kind: 'turn'; readonly turn: Turn }
  | { readonly kind: 'thinking'; readonly blocks: Block[] };

/**
 * Function outputs open their user turn, and an assistant turn's thinking comes before what it led
 * to, also when several items were merged into that turn.
 */
const RESPONSES_TURN_RULES: TurnRules = {
  firstKinds: { user: ['tool_result'], assistant: ['thinking', 'redacted_thinking'] },
  emptyParam: 'input',
  emptyProblem:
    'must hold at least one user or assistant message, function call or function call output with content; instructions alone leave nothing to answer.',
};

/** The system prompt (`instructions`, then every system and developer item's text, in order) and the turns. */
export function conversationFor(body: Readonly<Json>, toolNames: ToolNameMap): Conversation {
  const system: Block[] = [];
  if (isSet(body.instructions)) system.push(...nonEmptyText([textBlock(requireString(body.instructions, 'instructions'))]));
  const turns: Turn[] = [];
  // Reasoning items precede the output they led to: their blocks wait for the next assistant content,
  // and are dropped if none comes (a turn of thinking alone would be a prefill Messages refuses).
  let pendingThinking: Block[] = [];
  for (const piece of inputPieces(body.input, toolNames)) {
    if (piece.kind === 'none') continue;
    if (piece.kind === 'system') {
      system.push(...piece.blocks);
      continue;
    }
    if (piece.kind === 'thinking') {
      pendingThinking.push(...piece.blocks);
      continue;
    }
    const { turn } = piece;
    if (turn.content.length === 0) continue;
    if (turn.role === 'user') {
      turns.push(turn);
      continue;
    }
    turns.push({ role: 'assistant', content: [...pendingThinking, ...asBlocks(turn.content)] });
    pendingThinking = [];
  }
  return { system, messages: normalisedTurns(turns, RESPONSES_TURN_RULES) };
}

function inputPieces(input: unknown, toolNames: ToolNameMap): ItemPiece[] {
  if (typeof input === 'string') return [{ kind: 'turn', turn: { role: 'user', content: input } }];
  return requireArray(input, 'input').map((entry, i) => itemPiece(entry, `input[${i}]`, toolNames));
}

function itemPiece(value: unknown, param: string, toolNames: ToolNameMap): ItemPiece {
  const item = requireRecord(value, param);
  const kind = itemKind(item, param);
  switch (kind) {
    case 'message':
      return messagePiece(item, param);
    case 'function_call':
      return { kind: 'turn', turn: { role: 'assistant', content: [toolUseBlock(item, param, toolNames)] } };
    case 'function_call_output':
      return { kind: 'turn', turn: { role: 'user', content: [toolResultBlock(item, param)] } };
    case 'reasoning':
      return { kind: 'thinking', blocks: thinkingBlocks(item, param) };
    case 'web_search_call':
      // A search Claude ran in an earlier answer. Messages takes a search back only with its encrypted
      // results, which OpenAI's item does not hold; the answer that used them (the message after it)
      // is what the conversation keeps, so the search itself is left out.
      return { kind: 'none' };
    case 'item_reference':
      // Resolved beforehand (expanded-input.ts); one left here has nothing to resolve to.
      throw invalid(param, 'refers to an item this gateway does not hold; send the item itself.');
    default:
      throw invalid(
        `${param}.type`,
        `'${kind}' items cannot be sent to this model; input may hold messages, function calls, function call outputs, reasoning items and web search calls.`,
      );
  }
}

/** An item's type; the SDKs leave it out of plain messages, and item references may omit it too. */
function itemKind(item: Json, param: string): string {
  if (isSet(item.type)) return requireString(item.type, `${param}.type`);
  if (isSet(item.role)) return 'message';
  if (isSet(item.id)) return 'item_reference';
  throw invalid(param, 'must be a message with role and content, or an item with a type.');
}

function messagePiece(item: Json, param: string): ItemPiece {
  const contentParam = `${param}.content`;
  switch (item.role) {
    case 'system':
    case 'developer':
      // Messages has one system prompt; both roles instruct the model, so both go there, in order.
      return { kind: 'system', blocks: contentBlocks(item.content, contentParam, 'system') };
    case 'user':
      if (typeof item.content === 'string') return { kind: 'turn', turn: { role: 'user', content: item.content } };
      return { kind: 'turn', turn: { role: 'user', content: contentBlocks(item.content, contentParam, 'user') } };
    case 'assistant':
      return { kind: 'turn', turn: { role: 'assistant', content: contentBlocks(item.content, contentParam, 'assistant') } };
    default:
      throw invalid(`${param}.role`, `'${String(item.role)}' is not a message role; use 'user', 'assistant', 'system' or 'developer'.`);
  }
}
