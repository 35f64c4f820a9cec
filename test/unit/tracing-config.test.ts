import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/config.js';

/* The OTEL_* variables: tracing is configured only by an OTLP endpoint, read with the standard names' meanings. */

describe.concurrent('tracing configuration', () => {
  it('is off without an OTLP endpoint, whatever else is set', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).tracing).toBeUndefined();
  });

  it('posts to <endpoint>/v1/traces; the retired traces endpoint is said at start, not read', () => {
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing?.url).toBe('http://collector:4318/v1/traces');
    const both = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://other/otlp/traces',
    });
    expect(both.tracing?.url).toBe('http://collector:4318/v1/traces');
    expect(both.retiredVariables.map(({ name }) => name)).toEqual(['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
  });

  it('takes the defaults of the OpenTelemetry SDK, and headers as the exporter writes them', () => {
    const tracing = loadConfig({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_HEADERS: 'api-key=a%20b, x-tenant=t1,broken',
    }).tracing;
    expect(tracing).toEqual({
      url: 'http://c:4318/v1/traces',
      headers: { 'api-key': 'a b', 'x-tenant': 't1' },
      serviceName: 'vending-gateway',
      sampler: 'parentbased_always_on',
      samplerRatio: 1,
      exportDelayMs: 5_000,
    });
  });

  it('reads a sampling ratio from 0 to 1 and refuses anything else in one line', () => {
    const ratio = (value: string) =>
      loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: value,
      }).tracing?.samplerRatio;
    expect(ratio('0.25')).toBe(0.25);
    expect(ratio('0')).toBe(0);
    expect(ratio('1')).toBe(1);
    for (const bad of ['1.5', '-0.1', 'half', '2']) expect(() => ratio(bad)).toThrow(ConfigError);
    expect(() => ratio('1.5')).toThrow('OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "1.5"');
  });
});
