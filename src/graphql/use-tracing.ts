import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import type { Plugin } from 'graphql-yoga';
import type { GatewayContext } from './context.js';
import { TRACER_NAME, type Tracing } from '../tracing/tracing.js';

/*
 * GraphQL spans, with tracing on. The operation's execution (and a
 * subscription's lifetime) is `@envelop/opentelemetry`'s span, named
 * `query.<operation name>`; it runs resolvers in its context, so upstream
 * calls become its children. That plugin makes no parse or validation span,
 * so those two are ours, as is each subscription delivery: a child of the
 * webhook's publication (one trace from webhook to subscriber) and linked to it.
 * The plugin loads with the SDK, on start: off, neither is ever imported.
 */

type AnyPlugin = Plugin<Record<string, unknown>>;

export interface GraphQLTracing {
  plugins: Plugin[];
  /** Resolves once the execution plugin is loaded (before the gateway listens). */
  loaded: Promise<void>;
}

/** A span around one step, when the step belongs to a traced request (WebSocket operations have none: their execution span is the root). */
function stepSpan(tracer: Tracer, name: string) {
  if (!trace.getSpan(context.active())) return undefined;
  return tracer.startSpan(name);
}

export function useTracing(tracing: Tracing): GraphQLTracing {
  const { tracer } = tracing;
  let execution: AnyPlugin | undefined;
  const loaded = import('@envelop/opentelemetry').then(({ useOpenTelemetry }) => {
    // Variables and results stay out of spans (they may hold payment data); a document with inline arguments too.
    execution = useOpenTelemetry(
      { resolvers: false, variables: false, result: false },
      trace.getTracerProvider(),
      SpanKind.INTERNAL,
      {},
      TRACER_NAME,
    ) as AnyPlugin;
  });

  const steps: Plugin = {
    onParse() {
      const span = stepSpan(tracer, 'graphql.parse');
      return span && (({ result }) => endStep(span, result instanceof Error ? result : undefined));
    },
    onValidate() {
      const span = stepSpan(tracer, 'graphql.validate');
      return span && (({ valid }) => endStep(span, valid ? undefined : new Error('invalid document')));
    },
  };

  // Delegates to the execution plugin once it is loaded; nothing runs before the gateway listens.
  const executionSpans: AnyPlugin = {
    onExecute: (payload) => execution?.onExecute?.(payload),
    onSubscribe: (payload) => execution?.onSubscribe?.(payload),
  };

  const deliveries: Plugin<GatewayContext> = {
    onSubscribe({ args }) {
      const current = args.contextValue.currentEvent;
      return {
        onSubscribeResult: () => ({
          onNext: () => {
            const carried = current.traceContext;
            if (!carried) return;
            current.traceContext = undefined;
            const published = propagation.extract(ROOT_CONTEXT, carried);
            const link = trace.getSpanContext(published);
            tracer
              .startSpan(
                'deliver transactionUpdated',
                {
                  kind: SpanKind.CONSUMER,
                  startTime: current.deliveryStartedAt,
                  links: link ? [{ context: link }] : [],
                  attributes: {
                    'messaging.operation.type': 'process',
                    'messaging.message.id': current.eventId ?? '',
                    'vending_gateway.event.position': current.position ?? '',
                  },
                },
                published,
              )
              .end();
          },
        }),
      };
    },
  };

  return { plugins: [steps, executionSpans, deliveries] as Plugin[], loaded };
}

function endStep(span: ReturnType<Tracer['startSpan']>, error: Error | undefined): void {
  if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  span.end();
}
