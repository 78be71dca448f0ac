// Cancelling a running tool call from the client.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { TRANSPORTS, normalizeResult, startHangar, textResult, timed } from './harness.mjs';

const QUIET_MS = 300;

/**
 * Starts v1full's spin tool (which never returns), aborts it after 500ms,
 * checks that the SDK rejected the call and sent notifications/cancelled,
 * and returns the tools/call request.
 */
async function spinAndAbort(s) {
  const ac = new AbortController();
  const outcome = s.callTool('spin', {}, { signal: ac.signal, timeout: 60_000 }).then(() => 'resolved', (err) => err);
  await sleep(500); // let the plugin start spinning
  ac.abort('test abort');
  const err = await outcome;
  // The SDK rejects at once, wrapping the reason.
  assert.notEqual(err, 'resolved');
  assert.equal(err.message, 'MCP error -32001: test abort');
  const call = s.sent.find((m) => m.method === 'tools/call' && m.params.name === 'spin');
  const cancelled = s.sent.filter((m) => m.method === 'notifications/cancelled');
  assert.deepEqual(cancelled.map((m) => m.params), [{ requestId: call.id, reason: 'test abort' }]);
  return call;
}

for (const kind of TRANSPORTS) {
  describe(`cancellation over ${kind}`, { timeout: 120_000 }, () => {
    test('an aborted call stops the plugin; the session goes on', async (t) => {
      // v1full has a single instance, so a follow-up v1full call can only run
      // once the spinning one has really been stopped.
      const h = await startHangar(kind, { t });
      const s = await h.connect();
      await spinAndAbort(s);

      const { value: res, ms } = await timed(() => s.callTool('sleep_ms', { ms: 1 }));
      assert.deepEqual(normalizeResult(res), textResult('slept 1ms'));
      assert.ok(ms < 3_000, `the next v1full call took ${ms}ms`);
      const other = await timed(() => s.callTool('test_simple_text'));
      assert.deepEqual(normalizeResult(other.value), textResult('This is a simple text response for testing.'));
      assert.ok(other.ms < 3_000, `the next conformance call took ${other.ms}ms`);
    });

    test('a cancelled request gets no result', async (t) => {
      // MCP 2025-11-25, cancellation: receivers of notifications/cancelled
      // SHOULD not send a response for the cancelled request. The Go SDK
      // always answers a call; Hangar makes that answer an explicit
      // "request cancelled" error (-32800), never a result.
      const h = await startHangar(kind, { t });
      const s = await h.connect();
      const call = await spinAndAbort(s);
      // A later call's answer shows the server has handled the cancellation.
      await s.callTool('sleep_ms', { ms: 1 });
      await sleep(QUIET_MS);
      for (const m of s.received.filter((m) => m.id === call.id && m.method === undefined)) {
        assert.equal(m.result, undefined);
        assert.deepEqual(m.error, { code: -32800, message: 'request cancelled' });
      }
    });

    test('cancelling a call waiting on the client (sampling) ends it too', async (t) => {
      // One instance: the follow-up call needs the cancelled one's.
      const h = await startHangar(kind, { t, plugins: [{ name: 'conformance', limits: { max_instances: 1 } }] });
      const { CreateMessageRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
      let pending = 0;
      const s = await h.connect({
        capabilities: { sampling: {} },
        // Never answers.
        setup: (c) => c.setRequestHandler(CreateMessageRequestSchema, () => { pending++; return new Promise(() => {}); }),
      });
      const ac = new AbortController();
      const outcome = s.callTool('test_sampling', { prompt: 'never' }, { signal: ac.signal }).then(() => 'resolved', (e) => e);
      await s.waitFor('sampling/createMessage', (msgs) => msgs.some((m) => m.method === 'sampling/createMessage'));
      ac.abort('stop waiting');
      assert.equal((await outcome).message, 'MCP error -32001: stop waiting');
      assert.equal(pending, 1);

      // The plugin's only instance is free for the next call.
      const { value, ms } = await timed(() => s.callTool('test_simple_text'));
      assert.deepEqual(normalizeResult(value), textResult('This is a simple text response for testing.'));
      assert.ok(ms < 3_000, `took ${ms}ms`);
    });
  });
}
