/** The built-in demo provider `echo` (see `client.ts`). */
export { EchoClient } from './client';
