// Notifications from plugins to the client: logging, progress, list_changed.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import { ProgressNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { TRANSPORTS, listAll, names, normalizeResult, startHangar, textResult } from './harness.mjs';

const LOG = 'notifications/message';
const PROGRESS = 'notifications/progress';
// How long to wait for notifications that must not come.
const QUIET_MS = 300;

const params = (msgs) => msgs.map((m) => m.params);

for (const kind of TRANSPORTS) {
  describe(`notifications over ${kind}`, { timeout: 120_000 }, () => {
    test('logging: messages at or above the level arrive before the result', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect();
      await s.client.setLoggingLevel('info');

      const res = await s.callTool('test_tool_with_logging');
      assert.deepEqual(normalizeResult(res), textResult('Tool with logging executed successfully'));
      // Sent while the tool ran, so already here when the result is. The
      // schema types data as an object: the PDK sends text as {message}.
      assert.deepEqual(params(s.notifications(LOG)), [
        { level: 'info', data: { message: 'Tool execution started' } },
        { level: 'info', data: { message: 'Tool processing data' } },
        { level: 'info', data: { message: 'Tool execution completed' } },
      ]);

      // From warning up, of the eight levels v1full logs.
      await s.client.setLoggingLevel('warning');
      const before = s.notifications(LOG).length;
      assert.deepEqual(normalizeResult(await s.callTool('log_levels')), textResult('logged 8 messages'));
      await sleep(QUIET_MS);
      assert.deepEqual(params(s.notifications(LOG).slice(before)),
        ['warning', 'error', 'critical', 'alert', 'emergency'].map((level) => ({ level, logger: 'v1full', data: { message: level } })));
    });

    test('logging: nothing arrives below the level', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect();
      await s.client.setLoggingLevel('error');
      const res = await s.callTool('test_tool_with_logging');
      assert.deepEqual(normalizeResult(res), textResult('Tool with logging executed successfully'));
      await sleep(QUIET_MS);
      assert.deepEqual(s.notifications(LOG), []);

      // Lowering the level later lets them through again.
      await s.client.setLoggingLevel('debug');
      await s.callTool('test_tool_with_logging');
      assert.equal(s.notifications(LOG).length, 3);
    });

    test('progress: notifications carry the request\'s token (onprogress)', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect();
      const seen = [];
      const res = await s.callTool('test_tool_with_progress', {}, { onprogress: (p) => seen.push(p) });
      assert.deepEqual(normalizeResult(res), textResult('Tool with progress executed successfully'));
      // With onprogress the SDK sends the request id as the token.
      const call = s.sent.find((m) => m.method === 'tools/call' && m.params.name === 'test_tool_with_progress');
      assert.equal(call.params._meta.progressToken, call.id);
      // All three were on the wire before the result.
      assert.deepEqual(params(s.notifications(PROGRESS)),
        [0, 50, 100].map((progress) => ({ progressToken: call.id, progress, total: 100 })));
      const expected = [0, 50, 100].map((progress) => ({ progress, total: 100 }));
      if (kind === 'http') {
        assert.deepEqual(seen, expected);
      } else {
        // The TS SDK (1.32) runs notification handlers a microtask late but
        // handles responses at once, so when the last notification and the
        // result come in one stdio read, the request's progress handler is
        // gone before the last notification reaches it. That is the client's
        // doing (the wire order, checked above, is right): only require what
        // reached onprogress to be in order.
        assert.ok(seen.length >= 1);
        assert.deepEqual(seen, expected.slice(0, seen.length));
      }
    });

    test('progress: a string token is passed back as is; no token, no progress', async (t) => {
      const h = await startHangar(kind, { t });
      // Take progress notifications over from the SDK, which would report
      // tokens it did not make itself as errors.
      const s = await h.connect({ setup: (c) => c.setNotificationHandler(ProgressNotificationSchema, () => {}) });
      const token = `tok-${kind}-42`;
      const res = await s.client.callTool({ name: 'test_tool_with_progress', arguments: {}, _meta: { progressToken: token } });
      assert.deepEqual(normalizeResult(res), textResult('Tool with progress executed successfully'));
      assert.deepEqual(params(s.notifications(PROGRESS)),
        [0, 50, 100].map((progress) => ({ progressToken: token, progress, total: 100 })));

      const plain = await s.callTool('test_tool_with_progress');
      assert.deepEqual(normalizeResult(plain), textResult('Tool with progress executed successfully'));
      await sleep(QUIET_MS);
      assert.equal(s.notifications(PROGRESS).length, 3);
    });

    test('list_changed: a tool added at run time is announced and listed', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect();
      assert.equal((await names(s, 'tools')).includes('extra_tool'), false);

      assert.deepEqual(normalizeResult(await s.callTool('enable_extra_tool')), textResult('enabled extra_tool'));
      await s.waitForNotifications('notifications/tools/list_changed', 1);
      const tools = await listAll(s, 'tools');
      assert.deepEqual(tools.find((x) => x.name === 'extra_tool'),
        { name: 'extra_tool', description: 'A tool added at run time', inputSchema: { type: 'object', properties: {} } });
      assert.deepEqual(normalizeResult(await s.callTool('extra_tool')), textResult('extra tool called'));

      // Resources and prompts too.
      await s.callTool('enable_extra_resource');
      await s.waitForNotifications('notifications/resources/list_changed', 1);
      assert.ok((await listAll(s, 'resources')).some((r) => r.uri === 'v1full://extra'));
      assert.deepEqual((await s.client.readResource({ uri: 'v1full://extra' })).contents,
        [{ uri: 'v1full://extra', mimeType: 'text/plain', text: 'extra resource' }]);
      await s.callTool('enable_extra_prompt');
      await s.waitForNotifications('notifications/prompts/list_changed', 1);
      assert.ok((await names(s, 'prompts')).includes('extra_prompt'));

      // And away again.
      assert.deepEqual(normalizeResult(await s.callTool('disable_extras')), textResult('disabled extras'));
      await s.waitForNotifications('notifications/tools/list_changed', 2);
      await s.waitForNotifications('notifications/resources/list_changed', 2);
      await s.waitForNotifications('notifications/prompts/list_changed', 2);
      assert.equal((await names(s, 'tools')).includes('extra_tool'), false);
      assert.equal((await listAll(s, 'resources')).some((r) => r.uri === 'v1full://extra'), false);
      assert.equal((await names(s, 'prompts')).includes('extra_prompt'), false);
      // An unknown tool is a protocol error (invalid params).
      await assert.rejects(s.callTool('extra_tool'), { code: -32602, message: /unknown tool "extra_tool"/ });
    });
  });
}
