import { expect } from 'chai';
import { tracesSettings } from '../../src/telemetry/settings';

const NONE = { endpoint: '', headers: {} };

describe('telemetry/tracesSettings', () => {
  it('is off without an endpoint in gateway.yaml or the environment', () => {
    expect(tracesSettings(NONE, {})).to.equal(null);
  });

  it('takes gateway.yaml first, then the OTEL_* variables for what it leaves unset', () => {
    const settings = tracesSettings(
      { endpoint: 'http://collector:4318/v1/traces', headers: { 'x-team': 'yaml' } },
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://ignored:4318', OTEL_EXPORTER_OTLP_HEADERS: 'x-team=env,x-key=a%20b', OTEL_TRACES_SAMPLER_ARG: '0.25', OTEL_SERVICE_NAME: 'gw-eu' },
    )!;
    expect(settings).to.include({ url: 'http://collector:4318/v1/traces', sampleRatio: 0.25, serviceName: 'gw-eu' });
    expect(settings.headers).to.deep.equal({ 'x-team': 'yaml', 'x-key': 'a b' });
    expect(tracesSettings({ ...NONE, sample_ratio: 0 }, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/v1/traces', OTEL_TRACES_SAMPLER_ARG: '0.5' })!.sampleRatio).to.equal(0);
  });

  it('adds /v1/traces to the generic endpoint, never to the traces one', () => {
    expect(tracesSettings(NONE, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' })!.url).to.equal('http://c:4318/v1/traces');
    expect(tracesSettings(NONE, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/custom' })!.url).to.equal('http://c:4318/custom');
  });

  it('is off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever gateway.yaml says', () => {
    const yaml = { endpoint: 'http://c/v1/traces', headers: {} };
    expect(tracesSettings(yaml, { OTEL_SDK_DISABLED: 'true' })).to.equal(null);
    expect(tracesSettings(yaml, { OTEL_TRACES_EXPORTER: 'none' })).to.equal(null);
  });

  it('bounds the export queue by OTEL_BSP_* and ignores values that are not positive integers', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '500', OTEL_BSP_SCHEDULE_DELAY: '-3' };
    expect(tracesSettings(NONE, env)).to.include({ maxQueueSize: 100, maxExportBatchSize: 100, scheduledDelayMs: 1000 });
  });
});
