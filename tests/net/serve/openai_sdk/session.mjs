// A scripted session of the official OpenAI Node SDK against a running
// `kvscope-cli serve` (run_session.sh starts it): every call a client makes
// in practice, and the SDK's typed errors. Exits non-zero with the failing
// step's name on the first thing that is not as the SDK expects.
//
//   node session.mjs BASE_URL API_KEY
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const [base, apiKey] = process.argv.slice(2);
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });

async function step(name, body) {
  try {
    await body();
    console.log(`ok: ${name}`);
  } catch (e) {
    console.error(`FAILED: ${name}: ${e?.stack ?? e}`);
    process.exit(1);
  }
}

// The server's figures, as a scraper reads them.
async function metric(name, labels = '') {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name) && l.includes(labels));
  return line ? Number(line.split(' ').pop()) : undefined;
}

let model;
await step('models.list', async () => {
  const page = await client.models.list();
  assert.equal(page.data.length, 1);
  model = page.data[0].id;
  assert.equal(page.data[0].object, 'model');
});

await step('models.retrieve', async () => {
  const m = await client.models.retrieve(model);
  assert.equal(m.id, model);
  await assert.rejects(client.models.retrieve('no-such-model'), OpenAI.NotFoundError);
});

await step('completions.create', async () => {
  const c = await client.completions.create({ model, prompt: 'Hello', max_tokens: 8, temperature: 0 });
  assert.equal(typeof c.choices[0].text, 'string');
  assert.equal(c.usage.completion_tokens, 8);
  assert.equal(c.choices[0].finish_reason, 'length');
});

await step('chat.completions.create, streamed, with usage', async () => {
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: 'Hi' }],
    max_tokens: 8,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    usage = chunk.usage ?? usage;
  }
  assert.ok(text.length > 0, 'no content streamed');
  assert.equal(usage.completion_tokens, 8);
  assert.ok(usage.prompt_tokens > 0);
});

await step('an invalid request is a BadRequestError', async () => {
  await assert.rejects(client.completions.create({ model, prompt: 'Hello', max_tokens: -1 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, `got ${e?.constructor?.name}`);
    assert.equal(e.status, 400);
    assert.equal(e.type, 'invalid_request_error');
    return true;
  });
});

await step('a wrong key is an AuthenticationError', async () => {
  const stranger = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(stranger.models.list(), OpenAI.AuthenticationError);
});

await step('an aborted stream frees its request', async () => {
  const aborted = (await metric('kvscope:request_success_total', 'finished_reason="abort"')) ?? 0;
  // Long enough (ignore_eos, 4,000 tokens) that the reply is still being
  // written when the client hangs up after its first token.
  const stream = await client.completions.create({
    model,
    prompt: 'Once upon a time',
    max_tokens: 4000,
    stream: true,
    ignore_eos: true,
  });
  let chunks = 0;
  for await (const _ of stream) {
    if (++chunks === 1) stream.controller.abort(); // the SDK's way: the loop ends without an error
  }
  assert.ok(chunks < 4000, `all ${chunks} chunks came after the abort`);
  // The server notices the hang-up and ends the request (its KV freed).
  const deadline = Date.now() + 5000;
  while ((await metric('kvscope:request_success_total', 'finished_reason="abort"')) !== aborted + 1) {
    assert.ok(Date.now() < deadline, 'the abort was not counted within 5 s');
    await new Promise((r) => setTimeout(r, 20));
  }
  while ((await metric('kvscope:num_requests_running')) !== 0) {
    assert.ok(Date.now() < deadline, 'the aborted request was still running after 5 s');
    await new Promise((r) => setTimeout(r, 20));
  }
});
