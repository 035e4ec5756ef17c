#!/usr/bin/env node
/**
 * A minimal MCP server over stdio (newline-delimited JSON-RPC) with one tool, so Claude Code has an
 * MCP tool to defer and find through its tool search.
 */
import { createInterface } from 'node:readline';

const NOTE = process.env.NOTE_TEXT ?? 'note';
const TOOL = {
  name: 'lookup_note',
  description: 'Looks up the saved note',
  inputSchema: { type: 'object', properties: { topic: { type: 'string' } }, required: ['topic'] },
};

function reply(id, result) {
  process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id, result })}\n`);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  if (message.id === undefined) return; // notifications need no answer
  switch (message.method) {
    case 'initialize':
      return reply(message.id, { protocolVersion: message.params?.protocolVersion ?? '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'notes', version: '1.0.0' } });
    case 'tools/list':
      return reply(message.id, { tools: [TOOL] });
    case 'tools/call':
      return reply(message.id, { content: [{ type: 'text', text: NOTE }] });
    default:
      return process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'method not found' } })}\n`);
  }
});
