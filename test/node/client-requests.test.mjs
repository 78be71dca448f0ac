// Requests from plugins to the client: sampling, elicitation, roots.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { TRANSPORTS, normalizeResult, startHangar, textResult, timed } from './harness.mjs';

const QUIET_MS = 300;

// The form test_elicitation asks for (examples/conformance/schemas.go).
const USER_SCHEMA = {
  type: 'object',
  properties: {
    username: { type: 'string', description: "User's response" },
    email: { type: 'string', description: "User's email address" },
  },
  required: ['username', 'email'],
};

for (const kind of TRANSPORTS) {
  describe(`client requests over ${kind}`, { timeout: 120_000 }, () => {
    test('sampling: the plugin gets the client\'s answer', async (t) => {
      const h = await startHangar(kind, { t });
      const requests = [];
      const s = await h.connect({
        capabilities: { sampling: {} },
        setup: (c) => c.setRequestHandler(CreateMessageRequestSchema, async (req) => {
          requests.push(req.params);
          return {
            model: 'scripted-model',
            role: 'assistant',
            content: { type: 'text', text: `echo: ${req.params.messages[0].content.text}` },
            stopReason: 'endTurn',
          };
        }),
      });

      const res = await s.callTool('test_sampling', { prompt: 'What is 2+2? (sampling-7f3a)' });
      assert.deepEqual(normalizeResult(res), textResult('LLM response: echo: What is 2+2? (sampling-7f3a)'));
      assert.equal(requests.length, 1);
      assert.deepEqual(requests[0].messages,
        [{ role: 'user', content: { type: 'text', text: 'What is 2+2? (sampling-7f3a)' } }]);
      assert.equal(requests[0].maxTokens, 100);

      // The request came while the tool call was open, as a JSON-RPC
      // request of the server's own.
      const call = s.sent.find((m) => m.method === 'tools/call');
      const at = s.received.findIndex((m) => m.method === 'sampling/createMessage');
      const resultAt = s.received.findIndex((m) => m.id === call.id && m.method === undefined);
      assert.ok(at >= 0 && at < resultAt, `sampling request at ${at}, tool result at ${resultAt}`);
      assert.notEqual(s.received[at].id, undefined);
    });

    test('sampling: a client error reaches the plugin as a failure', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect({
        capabilities: { sampling: {} },
        setup: (c) => c.setRequestHandler(CreateMessageRequestSchema, async () => {
          throw new Error('user refused sampling');
        }),
      });
      const res = await s.callTool('test_sampling', { prompt: 'hi' });
      assert.deepEqual(normalizeResult(res), textResult(
        'sampling failed: pdk: create_message: calling "sampling/createMessage": user refused sampling', true));
      // The client did answer, with a JSON-RPC error.
      assert.deepEqual(s.sent.filter((m) => m.error).map((m) => m.error.message), ['user refused sampling']);
    });

    test('sampling: a client without the capability gets a clean tool error', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect();
      const { value: res, ms } = await timed(() => s.callTool('test_sampling', { prompt: 'hi' }));
      assert.deepEqual(normalizeResult(res),
        textResult('sampling failed: pdk: create_message: the client does not support sampling', true));
      assert.ok(ms < 5_000, `took ${ms}ms`);
      assert.equal(s.received.filter((m) => m.method === 'sampling/createMessage').length, 0);
    });

    test('elicitation (form): the plugin sees the accepted content', async (t) => {
      const h = await startHangar(kind, { t });
      const requests = [];
      const s = await h.connect({
        capabilities: { elicitation: { form: {} } },
        setup: (c) => c.setRequestHandler(ElicitRequestSchema, async (req) => {
          requests.push(req.params);
          if (req.params.message === 'Who are you?') {
            return { action: 'accept', content: { username: 'ada', email: 'ada@example.com' } };
          }
          return { action: 'decline' };
        }),
      });

      const res = await s.callTool('test_elicitation', { message: 'Who are you?' });
      assert.deepEqual(normalizeResult(res),
        textResult('User response: action=accept, content={"email":"ada@example.com","username":"ada"}'));
      assert.equal(requests.length, 1);
      assert.equal(requests[0].mode ?? 'form', 'form');
      assert.equal(requests[0].message, 'Who are you?');
      assert.deepEqual(requests[0].requestedSchema, USER_SCHEMA);

      // v1full's form: a decline has no content.
      const declined = await s.callTool('elicit_form', { message: 'Name, please' });
      assert.deepEqual(normalizeResult(declined), textResult('action=decline, content=null'));
      assert.equal(requests.length, 2);
      assert.deepEqual(requests[1].requestedSchema,
        { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] });
    });

    test('several requests at once (ctx.Ask): a session is asked one after another, in the order of the keys', async (t) => {
      const h = await startHangar(kind, { t });
      const asked = [];
      const s = await h.connect({
        capabilities: { sampling: {}, elicitation: { form: {} }, roots: {} },
        setup: (c) => {
          c.setRequestHandler(ListRootsRequestSchema, async () => {
            asked.push('roots/list');
            return { roots: [{ uri: 'file:///work', name: 'work' }] };
          });
          c.setRequestHandler(CreateMessageRequestSchema, async (req) => {
            asked.push(`sampling/createMessage ${req.params.messages[0].content.text}`);
            return { model: 'scripted-model', role: 'assistant', content: { type: 'text', text: 'Hi!' } };
          });
          c.setRequestHandler(ElicitRequestSchema, async (req) => {
            asked.push(`elicitation/create ${req.params.message}`);
            return { action: 'accept', content: { name: 'Ada' } };
          });
        },
      });
      const res = await s.callTool('test_input_required_result_multiple_inputs');
      assert.deepEqual(normalizeResult(res), textResult('Name: Ada; Greeting: Hi!; Roots: 1'));
      // client_roots, greeting, user_name
      assert.deepEqual(asked, ['roots/list', 'sampling/createMessage Generate a greeting', 'elicitation/create What is your name?']);
    });

    test('elicitation: a client without the capability gets a clean tool error', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect({ capabilities: { sampling: {} } });
      const { value: res, ms } = await timed(() => s.callTool('test_elicitation', { message: 'Who are you?' }));
      assert.deepEqual(normalizeResult(res),
        textResult('elicitation failed: pdk: create_elicitation: the client does not support elicitation', true));
      assert.ok(ms < 5_000, `took ${ms}ms`);
      assert.equal(s.received.filter((m) => m.method === 'elicitation/create').length, 0);
      // The session and the plugin are fine afterwards.
      assert.deepEqual(normalizeResult(await s.callTool('test_simple_text')),
        textResult('This is a simple text response for testing.'));
    });

    test('elicitation: only the modes the client declared are used', async (t) => {
      const h = await startHangar(kind, { t });
      const handler = (log) => (c) => c.setRequestHandler(ElicitRequestSchema, async (req) => {
        log.push(req.params);
        return { action: 'accept' };
      });
      const urlLog = [];
      const urlOnly = await h.connect({ capabilities: { elicitation: { url: {} } }, setup: handler(urlLog) });
      assert.deepEqual(normalizeResult(await urlOnly.callTool('test_elicitation', { message: 'form?' })),
        textResult('elicitation failed: pdk: create_elicitation: client does not support "form" elicitation', true));
      assert.deepEqual(urlLog, []);
      // URL mode round trip, then the completion notification.
      const res = await urlOnly.callTool('elicit_url', { url: 'https://example.com/consent', elicitationId: 'el-1' });
      assert.deepEqual(normalizeResult(res), textResult('action=accept'));
      assert.deepEqual(urlLog, [{
        mode: 'url', message: 'Please open the link', url: 'https://example.com/consent', elicitationId: 'el-1',
      }]);
      const done = await urlOnly.waitForNotifications('notifications/elicitation/complete', 1);
      assert.deepEqual(done.map((m) => m.params), [{ elicitationId: 'el-1' }]);

      const formLog = [];
      const formOnly = await h.connect({ capabilities: { elicitation: { form: {} } }, setup: handler(formLog) });
      assert.deepEqual(normalizeResult(await formOnly.callTool('elicit_url', { url: 'https://example.com/x', elicitationId: 'el-2' })),
        textResult('pdk: create_elicitation: client does not support "url" elicitation', true));
      assert.deepEqual(formLog, []);
    });

    test('elicitation: a form timeout ends the wait with a clean tool error', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect({
        capabilities: { elicitation: { form: {} } },
        setup: (c) => c.setRequestHandler(ElicitRequestSchema, () => new Promise(() => {})), // never answers
      });
      const { value: res, ms } = await timed(() => s.callTool('elicit_form', { timeout_ms: 300 }));
      assert.deepEqual(normalizeResult(res),
        textResult('pdk: create_elicitation: no answer from the client within 300ms', true));
      assert.ok(ms >= 250 && ms < 2_500, `took ${ms}ms`);
    });

    test('elicitation: a request the server gave up on is withdrawn (notifications/cancelled)', async (t) => {
      // MCP 2025-11-25, lifecycle/timeouts: a sender whose request timed out
      // SHOULD issue a cancellation notification for it. Repeated, because
      // whether it reaches the client can depend on timing.
      const h = await startHangar(kind, { t });
      const s = await h.connect({
        capabilities: { elicitation: { form: {} } },
        setup: (c) => c.setRequestHandler(ElicitRequestSchema, () => new Promise(() => {})), // never answers
      });
      const n = 8;
      for (let i = 0; i < n; i++) {
        const res = await s.callTool('elicit_form', { timeout_ms: 50 });
        assert.deepEqual(normalizeResult(res),
          textResult('pdk: create_elicitation: no answer from the client within 50ms', true));
      }
      const requests = s.received.filter((m) => m.method === 'elicitation/create').map((m) => m.id);
      assert.equal(requests.length, n);
      await sleep(QUIET_MS);
      const withdrawn = s.notifications('notifications/cancelled').map((m) => m.params.requestId);
      assert.deepEqual(withdrawn, requests);
    });

    test('roots: list_roots returns the client\'s roots; list_changed reaches on_roots_list_changed', async (t) => {
      const h = await startHangar(kind, { t });
      let roots = [{ uri: 'file:///work/alpha', name: 'alpha' }];
      let listed = 0;
      const s = await h.connect({
        capabilities: { roots: { listChanged: true } },
        setup: (c) => c.setRequestHandler(ListRootsRequestSchema, async () => {
          listed++;
          return { roots };
        }),
      });

      const first = await s.callTool('list_roots');
      assert.equal(first.isError, undefined, JSON.stringify(first));
      assert.deepEqual(JSON.parse(first.content[0].text), { roots: [{ uri: 'file:///work/alpha', name: 'alpha' }] });
      assert.equal(listed, 1);
      assert.deepEqual(normalizeResult(await s.callTool('roots_changed_count')), textResult('0'));

      roots = [{ uri: 'file:///work/beta', name: 'beta' }, { uri: 'file:///work/gamma' }];
      await s.client.sendRootsListChanged();
      // The plugin is told asynchronously; poll its counter.
      const deadline = Date.now() + 5_000;
      let count;
      for (;;) {
        count = (await s.callTool('roots_changed_count')).content[0].text;
        if (count !== '0' || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(count, '1');

      const second = await s.callTool('list_roots');
      assert.deepEqual(JSON.parse(second.content[0].text), {
        roots: [{ uri: 'file:///work/beta', name: 'beta' }, { uri: 'file:///work/gamma' }],
      });
      // Exactly once per notification, even after a while.
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(normalizeResult(await s.callTool('roots_changed_count')), textResult('1'));
    });

    test('roots: a client without the capability gets a clean tool error', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect();
      const { value: res, ms } = await timed(() => s.callTool('list_roots'));
      assert.deepEqual(normalizeResult(res), textResult('pdk: list_roots: the client does not support roots', true));
      assert.ok(ms < 5_000, `took ${ms}ms`);
      assert.equal(s.received.filter((m) => m.method === 'roots/list').length, 0);
    });
  });
}
