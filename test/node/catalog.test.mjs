// Listing and calling across plugins of all three interfaces at once.

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import {
  CATALOG, TRANSPORTS, listAll, names, normalizeResult, startHangar, textResult,
} from './harness.mjs';

const all = (kind) => Object.values(CATALOG).flatMap((c) => c[kind]).sort();

for (const kind of TRANSPORTS) {
  describe(`catalog over ${kind}`, { timeout: 120_000 }, () => {
    test('lists the tools, resources, templates and prompts of every plugin', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect();

      assert.deepEqual(await names(s, 'tools'), all('tools'));
      assert.deepEqual((await listAll(s, 'resources')).map((r) => r.uri).sort(), all('resources'));
      assert.deepEqual((await listAll(s, 'resourceTemplates')).map((r) => r.uriTemplate).sort(), all('templates'));
      assert.deepEqual(await names(s, 'prompts'), all('prompts'));

      // Descriptors pass through unchanged, whichever interface gave them.
      const tools = new Map((await listAll(s, 'tools')).map((x) => [x.name, x]));
      assert.deepEqual(tools.get('reverse'), {
        name: 'reverse',
        description: 'Reverses a string',
        inputSchema: {
          type: 'object',
          properties: { text: { type: 'string', description: 'the text to reverse' } },
          required: ['text'],
        },
      });
      assert.deepEqual(tools.get('lookup'), {
        name: 'lookup',
        description: 'Looks a key up in a fixed table',
        inputSchema: {
          type: 'object',
          properties: { key: { type: 'string', description: 'alpha or beta' } },
          required: ['key'],
        },
      });
      assert.deepEqual(tools.get('structured').outputSchema, {
        type: 'object', properties: { sum: { type: 'number' } }, required: ['sum'],
      });
      const resources = new Map((await listAll(s, 'resources')).map((r) => [r.uri, r]));
      assert.deepEqual(resources.get('servlet://logo.bin'), {
        uri: 'servlet://logo.bin', name: 'logo', description: 'Four binary bytes', mimeType: 'application/octet-stream',
      });
      const templates = await listAll(s, 'resourceTemplates');
      assert.deepEqual(templates.find((x) => x.name === 'item'), {
        uriTemplate: 'servlet://item/{id}', name: 'item', description: 'An item by id', mimeType: 'text/plain',
      });
      const prompts = await listAll(s, 'prompts');
      assert.deepEqual(prompts.find((p) => p.name === 'test_prompt_with_arguments').arguments, [
        { name: 'arg1', description: 'First test argument', required: true },
        { name: 'arg2', description: 'Second test argument', required: true },
      ]);
    });

    test('calls a tool of each interface and reads their resources and prompts', async (t) => {
      const h = await startHangar(kind, { t });
      const s = await h.connect();

      // legacy
      assert.deepEqual(normalizeResult(await s.callTool('reverse', { text: 'Hangar ✈' })), textResult('✈ ragnaH'));
      assert.deepEqual(normalizeResult(await s.callTool('add', { a: 2, b: 3 })), textResult('5'));
      // servlet
      assert.deepEqual(normalizeResult(await s.callTool('lookup', { key: 'beta' })), textResult('two'));
      // v1
      assert.deepEqual(normalizeResult(await s.callTool('test_simple_text')),
        textResult('This is a simple text response for testing.'));
      const structured = await s.callTool('structured', { a: 1.5, b: 2 });
      assert.deepEqual(structured.structuredContent, { sum: 3.5 });

      // Plugin failures are tool results with isError, per interface.
      assert.deepEqual(normalizeResult(await s.callTool('fail')), textResult('fail: requested failure', true));
      assert.deepEqual(normalizeResult(await s.callTool('lookup', { key: 'gamma' })),
        textResult('lookup: no such key: "gamma"', true));
      assert.deepEqual(normalizeResult(await s.callTool('test_error_handling')),
        textResult('This tool intentionally returns an error for testing', true));

      // servlet resources: static text, blob and template.
      assert.deepEqual((await s.client.readResource({ uri: 'servlet://greeting' })).contents,
        [{ uri: 'servlet://greeting', mimeType: 'text/plain', text: 'hello from servlet' }]);
      assert.deepEqual((await s.client.readResource({ uri: 'servlet://logo.bin' })).contents,
        [{ uri: 'servlet://logo.bin', mimeType: 'application/octet-stream', blob: 'AAEC/w==' }]);
      assert.deepEqual((await s.client.readResource({ uri: 'servlet://item/42' })).contents,
        [{ uri: 'servlet://item/42', mimeType: 'text/plain', text: 'item 42' }]);
      // v1 resource and prompt.
      assert.deepEqual((await s.client.readResource({ uri: 'test://static-text' })).contents,
        [{ uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' }]);
      const prompt = await s.client.getPrompt({ name: 'test_simple_prompt' });
      assert.deepEqual(prompt.messages,
        [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }]);
    });

    test('prefixes and plugin config apply per plugin', async (t) => {
      const h = await startHangar(kind, {
        t,
        plugins: [
          { name: 'lg', plugin: 'legacy', prefix: 'lg' },
          { name: 'sv', plugin: 'servlet', prefix: 'sv', config: { suffix: '!' } },
          // The same module twice, apart thanks to the prefix.
          { name: 'servlet', plugin: 'servlet' },
        ],
      });
      const s = await h.connect();

      assert.deepEqual(await names(s, 'tools'), ['lg_add', 'lg_fail', 'lg_reverse', 'lookup', 'sv_lookup']);
      assert.deepEqual((await listAll(s, 'resources')).map((r) => r.uri).sort(), [
        'servlet://greeting', 'servlet://logo.bin', 'sv+servlet://greeting', 'sv+servlet://logo.bin',
      ]);
      assert.deepEqual((await listAll(s, 'resourceTemplates')).map((r) => r.uriTemplate).sort(),
        ['servlet://item/{id}', 'sv+servlet://item/{id}']);

      assert.deepEqual(normalizeResult(await s.callTool('lg_reverse', { text: 'abc' })), textResult('cba'));
      assert.deepEqual(normalizeResult(await s.callTool('sv_lookup', { key: 'alpha' })), textResult('one!'));
      assert.deepEqual(normalizeResult(await s.callTool('lookup', { key: 'alpha' })), textResult('one'));
      assert.deepEqual((await s.client.readResource({ uri: 'sv+servlet://greeting' })).contents,
        [{ uri: 'sv+servlet://greeting', mimeType: 'text/plain', text: 'hello from servlet' }]);
      assert.deepEqual((await s.client.readResource({ uri: 'sv+servlet://item/7' })).contents,
        [{ uri: 'sv+servlet://item/7', mimeType: 'text/plain', text: 'item 7' }]);
    });
  });
}
