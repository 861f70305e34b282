'use strict';
// A small promise-based Node.js client of the tokend gRPC service.
//
// It loads the contract straight from ../../proto/tokend/v1/tokenizer.proto (no generated code),
// so it proves that the .proto file alone is enough to talk to tokend from another language.

const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const PROTO_ROOT = path.resolve(__dirname, '..', '..', 'proto');
const PROTO_FILE = 'tokend/v1/tokenizer.proto';
const TRAIN_CHUNK_BYTES = 1 << 20;
const FINISHED_STATES = new Set([
  'TRAIN_JOB_STATE_SUCCEEDED', 'TRAIN_JOB_STATE_FAILED', 'TRAIN_JOB_STATE_CANCELLED',
]);

// keepCase: field names as written in the .proto; longs as Numbers (token counts fit easily);
// defaults: absent scalars come back as 0 / "" like in every other proto3 runtime.
const LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

function loadService() {
  const definition = protoLoader.loadSync(PROTO_FILE, LOADER_OPTIONS);
  const pkg = grpc.loadPackageDefinition(definition);
  return pkg.tokend.v1.TokenizerService;
}

// The load-balancing policies every gRPC implementation ships (pick_first is the default).
const LB_POLICIES = ['pick_first', 'round_robin'];

// Channel options for a load-balancing policy, through the service config's
// loadBalancingConfig (as the Python client does); {} keeps gRPC's default.
function channelOptions(loadBalancing) {
  if (loadBalancing === undefined || loadBalancing === null) {
    return {};
  }
  if (!LB_POLICIES.includes(loadBalancing)) {
    throw new Error(`loadBalancing must be one of ${LB_POLICIES.join(', ')}, not ${JSON.stringify(loadBalancing)}`);
  }
  const config = { loadBalancingConfig: [{ [loadBalancing]: {} }] };
  return { 'grpc.service_config': JSON.stringify(config) };
}

class TokendClient {
  // target: "host:port", or several addresses for a balancing policy
  // ("dns:///tokend-headless.NAMESPACE.svc:50051", "ipv4:10.0.0.1:50051,10.0.0.2:50051");
  // options.token: bearer token sent as `authorization` metadata; options.timeoutMs: per-call
  // deadline; options.loadBalancing: 'round_robin' spreads calls over every resolved address.
  constructor(target, options = {}) {
    const Service = loadService();
    this.stub = new Service(
      target, grpc.credentials.createInsecure(), channelOptions(options.loadBalancing));
    this.token = options.token || null;
    this.timeoutMs = options.timeoutMs || 10000;
  }

  _call(method, request) {
    const metadata = new grpc.Metadata();
    if (this.token) {
      metadata.set('authorization', `Bearer ${this.token}`);
    }
    const deadline = new Date(Date.now() + this.timeoutMs);
    return new Promise((resolve, reject) => {
      this.stub[method](request, metadata, { deadline }, (err, response) => {
        if (err) {
          reject(err);
        } else {
          resolve(response);
        }
      });
    });
  }

  // Returns { tokenizer, results: [{ ids: [...] }, ...] }.
  // options.addSpecialTokens: frame each text as the model's post-processor does
  // ([CLS] ... [SEP], <s> ...); off by default, as counting for an API call wants.
  encode(tokenizer, texts, options = {}) {
    return this._call('Encode', {
      tokenizer, texts, add_special_tokens: Boolean(options.addSpecialTokens),
    });
  }

  // Returns { tokenizer, counts, messages_count, total, fits, remaining, exact,
  // estimate_reason, chat_rule, tools_count, images_count, model, context_window, ...,
  // breakdown: { system, messages, tools, images, framing, texts } } (the parts sum to total).
  // options: { model, tools (OpenAI tool definitions), toolChoice, maxTokens, plainText,
  //            addSpecialTokens (count each text with the model's framing tokens) }.
  // Messages are OpenAI-style: content may be a list of text / image_url parts (an image part
  // carries its width and height: images are never fetched); tool_calls are passed along.
  countTokens(tokenizer, texts, messages = [], options = {}) {
    const request = {
      tokenizer,
      texts,
      messages: messages.map(toChatMessage),
      model: options.model || '',
      tools_json: options.tools ? JSON.stringify(options.tools) : '',
      tool_choice: options.toolChoice || '',
      plain_text: Boolean(options.plainText),
      add_special_tokens: Boolean(options.addSpecialTokens),
    };
    if (options.maxTokens !== undefined) {
      request.max_tokens = options.maxTokens;
    }
    return this._call('CountTokens', request);
  }

  // What a call will cost (docs/counting.md, "Price quotes"). Returns the QuoteResponse:
  // { model, exact, estimate_reason, input_tokens, cache_write_tokens, cache_write_1h_tokens,
  //   cache_read_tokens, output_tokens_max, usd_min, usd_max (decimal strings), cache,
  //   cache_rule, breakpoints, prices: { source, version, snapshot, provider, model },
  //   parts: [{ part, tokens, usd_per_mtok, usd }] }.
  // options: { tools, toolChoice, maxOutputTokens (default: the model's maximum),
  //            cache ('cold' | 'warm' | 'prefix_tokens:N' | { prefix_tokens: N }), provider,
  //            vendor + vendorBody (a vendor's request body instead of messages:
  //            'anthropic', 'openai-responses', 'openai-chat', 'gemini') }.
  quote(model, messages = [], options = {}) {
    let cache = options.cache || '';
    if (typeof cache === 'object') {
      cache = `prefix_tokens:${cache.prefix_tokens}`;
    }
    const request = {
      count: {
        model,
        messages: messages.map(toChatMessage),
        tools_json: options.tools ? JSON.stringify(options.tools) : '',
        tool_choice: options.toolChoice || '',
      },
      vendor: options.vendor || '',
      vendor_body_json: options.vendorBody ? JSON.stringify(options.vendorBody) : '',
      cache,
      provider: options.provider || '',
    };
    if (options.maxOutputTokens !== undefined) {
      request.max_output_tokens = options.maxOutputTokens;
    }
    return this._call('Quote', request);
  }

  // Cut a text to at most maxTokens tokens. options: { keep: 'head'|'tail'|'both', marker }.
  // Returns { tokenizer, text, ids, count, truncated, head_chars, tail_chars, exact, ... }.
  truncate(tokenizer, text, maxTokens, options = {}) {
    const keep = { head: 'TRUNCATE_KEEP_HEAD', tail: 'TRUNCATE_KEEP_TAIL', both: 'TRUNCATE_KEEP_BOTH' };
    const request = { tokenizer, text, max_tokens: maxTokens, keep: keep[options.keep || 'head'] };
    if (request.keep === undefined) {
      return Promise.reject(new Error(`keep must be head, tail or both, not ${options.keep}`));
    }
    if (options.marker !== undefined) {
      request.marker = options.marker;
    }
    return this._call('Truncate', request);
  }

  // Split a document into pieces of at most maxTokens tokens (server-streamed), resolved as
  // [{ index, text, start, end, byte_start, byte_end, count, exact, estimate_reason }].
  chunk(tokenizer, text, maxTokens, options = {}) {
    const metadata = new grpc.Metadata();
    if (this.token) {
      metadata.set('authorization', `Bearer ${this.token}`);
    }
    const deadline = new Date(Date.now() + this.timeoutMs);
    const request = { tokenizer, text, max_tokens: maxTokens, overlap: options.overlap || 0 };
    return new Promise((resolve, reject) => {
      const pieces = [];
      const call = this.stub.Chunk(request, metadata, { deadline });
      call.on('data', (response) => pieces.push(...response.chunks));
      call.on('error', reject);
      call.on('end', () => resolve(pieces));
    });
  }

  // Compare tokenizers on texts (default: the server's parallel corpus, 20 languages).
  // options: { texts: [...], languages: true (add the per-language cost table) }.
  // Returns { texts_source, tokenizers: [{ tokenizer, n_vocab, tokens, bytes_per_token,
  // chars_per_token, tokens_per_word, vocab_used, ... }], languages: [{ tokenizer, language,
  // name, tokens, relative, ... }] }.
  report(tokenizers, options = {}) {
    return this._call('Report', {
      tokenizers: Array.isArray(tokenizers) ? tokenizers : [tokenizers],
      texts: options.texts || [],
      include_languages: Boolean(options.languages),
    });
  }

  // Lint a served tokenizer (docs/lint.md). options: { depth: 'full' (default) | 'import',
  // listPartial: true (list every partial-UTF-8 token), maxFindings: N (0: the server's 1000) }.
  // Returns { tokenizer, n_vocab, depth, findings: [{ kind, severity, id?, token? (Buffer),
  // token_text, message, extra_json }], summary: { kind: count }, checks, summaries_json,
  // truncated, seconds }.
  lint(tokenizer, options = {}) {
    const depths = { full: 'LINT_DEPTH_FULL', import: 'LINT_DEPTH_IMPORT' };
    const depth = depths[options.depth || 'full'];
    if (depth === undefined) {
      return Promise.reject(new Error(`depth must be full or import, not ${options.depth}`));
    }
    return this._call('Lint', {
      tokenizer, depth, list_partial_utf8: Boolean(options.listPartial),
      max_findings: options.maxFindings || 0,
    });
  }

  // What changed from tokenizer a to b (e.g. 'mytok@1', 'mytok@2'). options: { top: N (texts
  // whose counts changed most; 0: 10) }. Returns { a, b, a_n_vocab, b_n_vocab, summary,
  // errors, added: [{ id, token, text }], removed, changed, moved, specials_added,
  // specials_removed, specials_moved, languages: [{ language, name, a_tokens, b_tokens,
  // ratio }], texts: [{ text, a_tokens, b_tokens, ratio }] }.
  diff(a, b, options = {}) {
    return this._call('Diff', { a, b, top: options.top || 0 });
  }

  // Returns { tokenizer, text, data (Buffer), results }.
  decode(tokenizer, ids) {
    return this._call('Decode', { tokenizer, ids });
  }

  // Starts a training job and resolves to the queued TrainJob. config: { name, vocab_size,
  // special_tokens?, pattern?, model? ("byte-bpe" | "char" | "word-bpe" | "wordpiece" |
  // "unigram"; "" = byte-bpe), wordpiece_score? (wordpiece: "gain" | "ratio" | "count";
  // "" = gain), corpus_path? }; corpus: a string or Buffer, streamed as
  // corpus_chunk messages of 1 MiB (omit it when corpus_path names a server-side file).
  train(config, corpus) {
    const metadata = new grpc.Metadata();
    if (this.token) {
      metadata.set('authorization', `Bearer ${this.token}`);
    }
    const deadline = new Date(Date.now() + this.timeoutMs);
    const full = {
      name: config.name,
      vocab_size: config.vocab_size,
      special_tokens: config.special_tokens || [],
      pattern: config.pattern || '',
      corpus_path: config.corpus_path || '',
      model: config.model || '',
      wordpiece_score: config.wordpiece_score || '',
    };
    return new Promise((resolve, reject) => {
      const call = this.stub.Train(metadata, { deadline }, (err, response) => {
        if (err) {
          reject(err);
        } else {
          resolve(response.job);
        }
      });
      call.write({ config: full });
      if (corpus !== undefined && corpus !== null) {
        const data = Buffer.from(corpus);
        for (let start = 0; start < data.length; start += TRAIN_CHUNK_BYTES) {
          call.write({ corpus_chunk: data.subarray(start, start + TRAIN_CHUNK_BYTES) });
        }
      }
      call.end();
    });
  }

  // Resolves to the TrainJob's current state.
  getTrainJob(jobId) {
    return this._call('GetTrainJob', { job_id: jobId }).then((response) => response.job);
  }

  // Polls until the job is finished (SUCCEEDED, FAILED or CANCELLED) and resolves to it.
  async waitTrainJob(jobId, pollMs = 100) {
    for (;;) {
      const job = await this.getTrainJob(jobId);
      if (FINISHED_STATES.has(job.state)) {
        return job;
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
  }

  close() {
    this.stub.close();
  }
}

// An OpenAI-style message as the proto's ChatMessage.
function toChatMessage(message) {
  const out = { role: message.role, name: message.name || '', tool_call_id: message.tool_call_id || '' };
  if (Array.isArray(message.content)) {
    out.parts = message.content.map((part) => {
      if (part.type === 'image_url') {
        const url = part.image_url || {};
        return {
          image: {
            width: part.width || url.width || 0,
            height: part.height || url.height || 0,
            detail: part.detail || url.detail || '',
            url: url.url || '',
          },
        };
      }
      return { text: part.text || '' };
    });
  } else {
    out.content = message.content || '';
  }
  out.tool_calls = (message.tool_calls || []).map((call) => {
    const fn = call.function || call;
    const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments || {});
    return { id: call.id || '', name: fn.name || '', arguments: args };
  });
  return out;
}

module.exports = { TokendClient, loadService, toChatMessage, PROTO_ROOT, PROTO_FILE };
