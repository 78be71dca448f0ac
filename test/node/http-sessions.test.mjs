// Streamable HTTP only: several sessions on one server stay apart.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { names, normalizeResult, startHangar, textResult } from './harness.mjs';

const QUIET_MS = 300;

describe('concurrent HTTP sessions', { timeout: 120_000 }, () => {
  test('sampling and elicitation go to the session that made the call', async (t) => {
    const h = await startHangar('http', { t });
    let inFlight = 0;
    let maxInFlight = 0;
    const seen = { A: [], B: [] };
    const client = (label) => h.connect({
      name: `client-${label}`,
      capabilities: { sampling: {}, elicitation: { form: {} } },
      setup: (c) => {
        c.setRequestHandler(CreateMessageRequestSchema, async (req) => {
          seen[label].push(req.params.messages[0].content.text);
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await sleep(400); // long enough for both calls to be waiting at once
          inFlight--;
          return { model: `model-${label}`, role: 'assistant', content: { type: 'text', text: `answer from ${label}` } };
        });
        c.setRequestHandler(ElicitRequestSchema, async () => {
          await sleep(200);
          return { action: 'accept', content: { name: `user ${label}` } };
        });
      },
    });
    const [a, b] = await Promise.all([client('A'), client('B')]);
    assert.notEqual(a.transport.sessionId, undefined);
    assert.notEqual(a.transport.sessionId, b.transport.sessionId);

    const [ra, rb] = await Promise.all([
      a.callTool('test_sampling', { prompt: 'prompt of A' }),
      b.callTool('test_sampling', { prompt: 'prompt of B' }),
    ]);
    assert.deepEqual(normalizeResult(ra), textResult('LLM response: answer from A'));
    assert.deepEqual(normalizeResult(rb), textResult('LLM response: answer from B'));
    assert.deepEqual(seen, { A: ['prompt of A'], B: ['prompt of B'] });
    assert.equal(maxInFlight, 2, 'the two sampling requests were not outstanding at the same time');

    const [ea, eb] = await Promise.all([a.callTool('elicit_form'), b.callTool('elicit_form')]);
    assert.deepEqual(normalizeResult(ea), textResult('action=accept, content={"name":"user A"}'));
    assert.deepEqual(normalizeResult(eb), textResult('action=accept, content={"name":"user B"}'));
  });

  test('roots, logs and progress stay in their session', async (t) => {
    const h = await startHangar('http', { t });
    const client = (label) => h.connect({
      capabilities: { roots: { listChanged: true } },
      setup: (c) => c.setRequestHandler(ListRootsRequestSchema, async () => {
        await sleep(100);
        return { roots: [{ uri: `file:///sessions/${label}`, name: label }] };
      }),
    });
    const [a, b] = await Promise.all([client('A'), client('B')]);

    const [ra, rb] = await Promise.all([a.callTool('list_roots'), b.callTool('list_roots')]);
    assert.deepEqual(JSON.parse(ra.content[0].text), { roots: [{ uri: 'file:///sessions/A', name: 'A' }] });
    assert.deepEqual(JSON.parse(rb.content[0].text), { roots: [{ uri: 'file:///sessions/B', name: 'B' }] });

    await a.client.setLoggingLevel('debug');
    await b.client.setLoggingLevel('debug');
    const progress = [];
    await a.callTool('test_tool_with_logging');
    await a.callTool('test_tool_with_progress', {}, { onprogress: (p) => progress.push(p.progress) });
    await sleep(QUIET_MS);
    assert.equal(a.notifications('notifications/message').length, 3);
    assert.deepEqual(progress, [0, 50, 100]);
    assert.deepEqual(b.notifications('notifications/message'), []);
    assert.deepEqual(b.notifications('notifications/progress'), []);
  });

  test('list_changed reaches every session', async (t) => {
    const h = await startHangar('http', { t });
    const [a, b] = await Promise.all([h.connect(), h.connect()]);
    assert.equal((await names(b, 'tools')).includes('extra_tool'), false);
    await a.callTool('enable_extra_tool');
    await a.waitForNotifications('notifications/tools/list_changed', 1);
    await b.waitForNotifications('notifications/tools/list_changed', 1);
    assert.equal((await names(b, 'tools')).includes('extra_tool'), true);
    assert.deepEqual(normalizeResult(await b.callTool('extra_tool')), textResult('extra tool called'));
  });

  test('ending one session leaves the other working', async (t) => {
    const h = await startHangar('http', { t });
    const [a, b] = await Promise.all([h.connect(), h.connect()]);
    const endedId = a.transport.sessionId;
    const version = a.transport.protocolVersion;
    assert.equal(version, '2025-11-25');
    await a.close();

    assert.deepEqual(normalizeResult(await b.callTool('reverse', { text: 'still here' })), textResult('ereh llits'));
    // A request on the ended session is refused with 404 Not Found.
    const res = await fetch(h.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': endedId,
        'mcp-protocol-version': version,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    await res.body?.cancel();
    assert.equal(res.status, 404);
  });
});
