import type { ExecutionResult } from 'graphql';
import type { Plugin } from 'graphql-yoga';
import type { GatewayContext } from './context.js';
import type { GatewayError } from '../errors.js';
import type { Authenticator } from '../auth/authenticator.js';

/*
 * A subscription lives only while the credential it was opened with is
 * accepted: in forward mode while the upstream accepts the key, otherwise
 * while the key is still in API_KEYS_FILE with its `subscribe` permission,
 * or until the token expires. Every subscription, over graphql-ws or SSE,
 * passes envelop's subscribe, so this is the one place that ends them: the
 * credential is watched while the subscription is open, and when it is
 * refused the subscription sends one result carrying the refusal
 * (UNAUTHENTICATED or FORBIDDEN) and ends. graphql-ws then sends `complete`, SSE its `complete`
 * event, and neither kind of client resubscribes with a key that cannot work.
 */

type Results = AsyncIterableIterator<ExecutionResult>;

/** `source`, ended with a result carrying the refusal as soon as `watch` reports one. */
export function endedOnRefusal(
  source: AsyncIterable<ExecutionResult>,
  watch: (onRefused: (error: GatewayError) => void) => () => void,
): Results {
  const iterator = source[Symbol.asyncIterator]();
  let refusal: GatewayError | undefined;
  let finished = false;
  // Settles the `next()` under way when the refusal arrives while it waits for an event.
  let interrupt: (() => void) | undefined;
  const stopWatching = watch((error) => {
    refusal = error;
    interrupt?.();
  });
  const finish = async (): Promise<void> => {
    if (finished) return;
    finished = true;
    stopWatching();
    await iterator.return?.();
  };
  const results: Results = {
    async next() {
      if (!finished && refusal === undefined) {
        const next = await new Promise<IteratorResult<ExecutionResult> | undefined>((resolve, reject) => {
          interrupt = () => resolve(undefined);
          iterator.next().then(resolve, reject);
        }).finally(() => (interrupt = undefined));
        if (next?.done) {
          finished = true;
          stopWatching();
        }
        if (next) return next;
      }
      if (finished) return { done: true, value: undefined };
      await finish();
      return { done: false, value: { errors: [refusal!] } };
    },
    async return() {
      await finish();
      return { done: true, value: undefined };
    },
    async throw(error: unknown) {
      await finish();
      throw error;
    },
    [Symbol.asyncIterator]: () => results,
  };
  return results;
}

export function useKeyWatch(watch: NonNullable<Authenticator['watch']>): Plugin<GatewayContext> {
  return {
    onSubscribe: () => ({
      onSubscribeResult({ result, setResult, args }) {
        if (!(Symbol.asyncIterator in Object(result))) return;
        const { credential } = args.contextValue;
        setResult(endedOnRefusal(result as AsyncIterable<ExecutionResult>, (onRefused) => watch(credential, onRefused)));
      },
    }),
  };
}
