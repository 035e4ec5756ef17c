/**
 * The floor a gateway is measured against: the least a Node proxy hop can do (read the body, forward
 * it with undici, send the answer back), with no auth, parsing or routing. Prints `{"url": …}`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

const pool = new Pool(process.argv[2], { connections: 16 });

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    pool
      .request({ method: 'POST', path: req.url ?? '/', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) })
      .then(async (upstream) => {
        const body = Buffer.from(await upstream.body.arrayBuffer());
        res.writeHead(upstream.statusCode, { 'content-type': 'application/json', 'content-length': body.length });
        res.end(body);
      })
      .catch(() => res.destroy());
  });
});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
