/**
 * The mock upstream on 127.0.0.1: one HTTP server answering Anthropic paths with the Messages mock
 * and OpenAI paths with the OpenAI mock, and a log of every request and answer for the cases to
 * inspect (what Tollgate actually sent upstream).
 */
import { createServer } from 'node:http';
import { AnthropicMock } from './anthropic.mjs';
import { OpenAIMock } from './openai.mjs';

export async function startMockUpstream() {
  const log = [];
  const anthropic = new AnthropicMock(log);
  const openai = new OpenAIMock(log);
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      let body = {};
      try {
        body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'body is not JSON', type: 'invalid_request_error', param: null, code: null } }));
        return;
      }
      try {
        if (path.startsWith('/v1/messages')) anthropic.handle(path, req.headers, body, res);
        else openai.handle(path, body, res);
      } catch (err) {
        log.push({ path, body, crash: String(err?.stack ?? err) });
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `mock failure: ${err?.message}`, type: 'server_error', param: null, code: null } }));
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
