#!/usr/bin/env python3
"""Writes tests/data/tokenizers/o200k-subset-vocab.gguf and
o200k-subset.reference.jsonl: a small byte-level BPE vocabulary cut out of
o200k_harmony (gpt-oss; its o200k_base part is Phi-4-mini's and GPT-4o's)
that encodes the texts below exactly as the whole vocabulary does, and the
ids the original tokenizer gives them.

The whole vocabulary (200k tokens, about 5 MB as GGUF) is too large to keep
in the repository, so the file holds only what BPE meets on these texts:
the 256 single-byte tokens, every token some merge step could form while
the texts' words are merged (with the whole vocabulary's merge order, so the
same pair wins each step), and gpt-oss's harmony control tokens. Ids are
renumbered in the original order; the reference ids with them.

References come from the npm package gpt-tokenizer (4.0.0, MIT; OpenAI's
o200k rank table with an independent implementation of tiktoken's
pre-tokenizer and BPE), not from kvscope. The merges a GGUF converter
writes for a tiktoken vocabulary are recovered from the ranks: each
multi-byte token's merge is the pair that rank BPE over its own bytes, with
lower ranks only, ends in.

Needs node, python3-regex and gpt-tokenizer installed somewhere:

    (cd /tmp/gptok && npm install gpt-tokenizer@4.0.0)
    python3 engine/tokenizer/tools/make_o200k_subset.py /tmp/gptok/node_modules/gpt-tokenizer
"""
import base64
import json
import os
import struct
import subprocess
import sys

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "..", "..", "tests", "data", "tokenizers"))

# o200k's pattern as tiktoken writes it (\s is Unicode White_Space).
UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
O200K = (rf"[^\r\n\p{{L}}\p{{N}}]?{UPPER}*{LOWER}+{CONTRACTION}|"
         rf"[^\r\n\p{{L}}\p{{N}}]?{UPPER}+{LOWER}*{CONTRACTION}|\p{{N}}{{1,3}}|"
         r" ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# gpt-oss's harmony format tokens (o200k_harmony), all control tokens.
SPECIALS = {199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>",
            200003: "<|constrain|>", 200005: "<|channel|>", 200006: "<|start|>",
            200007: "<|end|>", 200008: "<|message|>", 200012: "<|call|>"}

# What o200k's pattern treats apart: case changes inside words (ASCII and
# not), title-case and modifier letters, combining marks, contractions of
# either case, digits in threes, "/" after newlines, whitespace runs, and
# the usual mix of scripts, emoji, code and special-token look-alikes.
TEXTS = [
    "", " ", "  ", "\t", "\n", "\n\n\n", "\r\n", " \n \n\n  \t\n", "a  b   c",
    "Hello world", " Hello World!", "Hello, world! How are you?",
    "helloWorld XMLHttpRequest getHTTPResponseCode iPhone McDonald's",
    "HELLO world HELLOworld ABCdef aBC",
    "I'm sure you don't know THEY'LL come, we'RE here, she'S done, it'd",
    "'s 's 'S ''t", "1 12 123 1234 12345 1234567 3.14159 1,000,000 ½ ²",
    "a/b/c\n/d !\r\n/x //comment ///",
    "int main(int argc, char** argv) {\n    return argc > 1 ? 0 : 1;\n}\n",
    "def f(x):\n\tif x:\n\t\treturn [x, {'k': 2}]\n",
    "https://example.com/path?q=1&r=two#frag",
    "привет мир приВет ПРИВЕТмир Москва",
    "Ελληνικά κείμενα ΚΕΙΜΕΝΑ", "ǅungla ǈubljana ʰello ˢmall",
    "नमस्ते दुनिया", "e\u0301cole caf\u00e9 n\u0303 a\u0308\u0301",
    "안녕하세요 세계", "こんにちは、世界！カタカナ", "你好，世界。我们", "مرحبا بالعالم",
    "สวัสดีครับ", "Cửa Việt Tiếng Việt",
    "🦙 🚀 (normal) 😶\u200d🌫️ 👨\u200d👩\u200d👧 🇪🇸 👍🏽",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ℌ𝔢𝔩𝔩𝔬",
    "<|endoftext|> <|return|>hi<|call|> <s> </s> <|im_end|>",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}\n# Title\n- item *bold*",
    "    indented\n        more\n", "!!!!!! ??? ... ,,,", "a" * 200,
    "The quick brown fox jumps over the lazy dog. " * 3,
]


def read_ranks(path):
    ranks = {}
    with open(path, "rb") as f:
        for line in f:
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
    return ranks


def reference_ids(package, texts):
    """gpt-tokenizer's o200k_harmony ids, special-token strings as text.
    (The texts hold no harmony markers <|start|>, <|message|>, <|channel|>,
    <|constrain|>, <|end|>: kvscope, as llama.cpp, always parses those.)"""
    script = ("const h = require(process.argv[1] + '/cjs/encoding/o200k_harmony');"
              "const texts = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              "console.log(JSON.stringify(texts.map("
              "t => h.encode(t, {disallowedSpecial: new Set()}))));")
    run = subprocess.run(["node", "-e", script, package], input=json.dumps(texts),
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


class MergeOrder:
    """The merges of a tiktoken vocabulary: token T's merge is the pair of
    tokens that rank BPE over T's bytes, with ranks below T's, ends in."""

    def __init__(self, ranks):
        self.ranks = ranks
        self.split = {}

    def merge_of(self, token):
        if token not in self.split:
            limit = self.ranks[token]
            parts = [token[i:i + 1] for i in range(len(token))]
            while len(parts) > 2:
                best = min((self.ranks.get(parts[i] + parts[i + 1], limit), i)
                           for i in range(len(parts) - 1))
                if best[0] >= limit:
                    break
                i = best[1]
                parts[i:i + 2] = [parts[i] + parts[i + 1]]
            assert len(parts) == 2, token
            self.split[token] = (parts[0], parts[1])
        return self.split[token]

    def rank_of_pair(self, a, b):
        """The pair's merge rank, or None when no merge joins exactly a and b."""
        token = a + b
        rank = self.ranks.get(token)
        if rank is None or self.merge_of(token) != (a, b):
            return None
        return rank


def bpe_collect(word, merges, needed):
    """Merges `word` (bytes) as BPE with the merge list does, adding to
    `needed` every token that any step could form. Returns the tokens."""
    parts = [word[i:i + 1] for i in range(len(word))]
    while len(parts) > 1:
        best = None
        for i in range(len(parts) - 1):
            rank = merges.rank_of_pair(parts[i], parts[i + 1])
            if rank is None:
                continue
            needed.add(parts[i] + parts[i + 1])
            if best is None or rank < best[0]:
                best = (rank, i)
        if best is None:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def byte_to_unicode():
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) +
                 list(range(0xAE, 0x100)))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(0x100 + extra)
            extra += 1
    return table


def gguf_string(s):
    data = s.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def gguf_kv(key, kind, value):
    out = gguf_string(key)
    if kind == "str":
        return out + struct.pack("<I", 8) + gguf_string(value)
    if kind == "u32":
        return out + struct.pack("<II", 4, value)
    if kind == "bool":
        return out + struct.pack("<IB", 7, 1 if value else 0)
    if kind == "str[]":
        return out + struct.pack("<IIQ", 9, 8, len(value)) + b"".join(gguf_string(v) for v in value)
    if kind == "i32[]":
        return out + struct.pack("<IIQ", 9, 5, len(value)) + struct.pack(f"<{len(value)}i", *value)
    raise ValueError(kind)


def write_gguf(path, kvs):
    body = struct.pack("<4sIQQ", b"GGUF", 3, 0, len(kvs)) + b"".join(gguf_kv(*kv) for kv in kvs)
    body += b"\0" * (-len(body) % 32)  # the (empty) data section is 32-byte aligned
    with open(path, "wb") as f:
        f.write(body)


def main():
    package = sys.argv[1]
    ranks = read_ranks(os.path.join(package, "data", "o200k_base.tiktoken"))
    by_rank = {rank: token for token, rank in ranks.items()}
    merges = MergeOrder(ranks)
    references = reference_ids(package, TEXTS)

    needed = {bytes([b]) for b in range(256)}
    for text, ids in zip(TEXTS, references):
        words = [w.encode("utf-8") for w in regex.findall(O200K, text)]
        got = [ranks[t] for w in words for t in bpe_collect(w, merges, needed)]
        if got != ids:  # the recovered merges must give the original's ids
            sys.exit(f"merge BPE disagrees with gpt-tokenizer on {text!r}:\n{got}\n{ids}")
    # A merge's parts are tokens of the subset too.
    closed = set()
    stack = list(needed)
    while stack:
        token = stack.pop()
        if token in closed:
            continue
        closed.add(token)
        if len(token) > 1:
            stack.extend(merges.merge_of(token))

    old_ids = sorted([ranks[t] for t in closed] + list(SPECIALS))
    new_id = {old: new for new, old in enumerate(old_ids)}
    b2u = byte_to_unicode()
    as_text = lambda token: "".join(b2u[b] for b in token)
    tokens, types = [], []
    for old in old_ids:
        if old in SPECIALS:
            tokens.append(SPECIALS[old])
            types.append(3)  # control
        else:
            tokens.append(as_text(by_rank[old]))
            types.append(1)  # normal
    merge_list = [" ".join(as_text(p) for p in merges.merge_of(by_rank[old]))
                  for old in old_ids if old not in SPECIALS and len(by_rank[old]) > 1]

    os.makedirs(OUT, exist_ok=True)
    gguf = os.path.join(OUT, "o200k-subset-vocab.gguf")
    write_gguf(gguf, [
        ("general.architecture", "str", "llama"),
        ("general.name", "str", "o200k_harmony subset (kvscope test data)"),
        ("tokenizer.ggml.model", "str", "gpt2"),
        ("tokenizer.ggml.pre", "str", "gpt-4o"),
        ("tokenizer.ggml.tokens", "str[]", tokens),
        ("tokenizer.ggml.token_type", "i32[]", types),
        ("tokenizer.ggml.merges", "str[]", merge_list),
        ("tokenizer.ggml.bos_token_id", "u32", new_id[199998]),
        ("tokenizer.ggml.eos_token_id", "u32", new_id[200002]),
        ("tokenizer.ggml.padding_token_id", "u32", new_id[199999]),
        ("tokenizer.ggml.add_bos_token", "bool", False),
        ("tokenizer.ggml.add_eos_token", "bool", False),
    ])
    reference = os.path.join(OUT, "o200k-subset.reference.jsonl")
    with open(reference, "w", encoding="utf-8") as f:
        for text, ids in zip(TEXTS, references):
            f.write(json.dumps({"text": text, "ids": [new_id[i] for i in ids],
                                "o200k_ids": ids}, ensure_ascii=False) + "\n")
    print(f"{gguf}: {len(tokens)} tokens, {len(merge_list)} merges; "
          f"{reference}: {len(TEXTS)} texts", file=sys.stderr)


if __name__ == "__main__":
    main()
