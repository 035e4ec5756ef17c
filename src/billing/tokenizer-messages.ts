/** What the main thread and the tokenizer's worker thread say to each other. */

/** To the worker: count a text, or stop counting one whose answer nobody waits for any more. */
export type ThreadRequest = { readonly kind: 'count'; readonly id: number; readonly text: string } | { readonly kind: 'cancel'; readonly id: number };

/** From the worker: the encoder is loaded, or a text's count. */
export type ThreadAnswer = { readonly kind: 'ready' } | { readonly kind: 'count'; readonly id: number; readonly tokens: number };
