#!/usr/bin/env python3
"""Compares the C++ pre-tokenizers (engine/tokenizer/pre_tokenizer.cpp) with
the original regular expressions run by Python's `regex` module (which has
\\p{L} and \\p{N}), on random text mixing scripts, digits, marks, emoji,
apostrophes and every kind of whitespace. A development check, not a test:
it needs g++ and python3-regex. Usage:

    python3 engine/tokenizer/tools/check_pre_tokenizers.py [SEED] [COUNT]

\\s is spelled out as Unicode's White_Space set (what Oniguruma, which
Hugging Face tokenizers use, means by \\s); Python's own \\s also takes
U+001C..U+001F. Multi-stage pre-tokenizers keep the text between matches,
as Hugging Face's Split(behavior="isolated") and llama.cpp do.
"""
import os
import random
import subprocess
import sys
import tempfile
import unicodedata

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))

WS = "\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
S, NS = f"[{WS}]", f"[^{WS}]"
OTHER = f"[^{WS}\\p{{L}}\\p{{N}}]"
GPT2 = (f"'s|'t|'re|'ve|'m|'ll|'d| ?\\p{{L}}+| ?\\p{{N}}+| ?{OTHER}+|{S}+(?!{NS})|{S}+")


def llama3(digits):
    return (f"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{{L}}\\p{{N}}]?\\p{{L}}+|\\p{{N}}{digits}|"
            f" ?{OTHER}+[\\r\\n]*|{S}*[\\r\\n]+|{S}+(?!{NS})|{S}+")


# Qwen 3.5: marks count as letters.
QWEN35 = (f"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{{L}}\\p{{N}}]?[\\p{{L}}\\p{{M}}]+|\\p{{N}}|"
          f" ?[^{WS}\\p{{L}}\\p{{M}}\\p{{N}}]+[\\r\\n]*|{S}*[\\r\\n]+|{S}+(?!{NS})|{S}+")

# o200k (tiktoken's o200k_base, Hugging Face's gpt-4o): letters by case.
UPPER = "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]"
LOWER = "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]"
CONTRACTION = "(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
O200K = (f"[^\\r\\n\\p{{L}}\\p{{N}}]?{UPPER}*{LOWER}+{CONTRACTION}|"
         f"[^\\r\\n\\p{{L}}\\p{{N}}]?{UPPER}+{LOWER}*{CONTRACTION}|\\p{{N}}{{1,3}}|"
         f" ?{OTHER}+[\\r\\n/]*|{S}*[\\r\\n]+|{S}+(?!{NS})|{S}+")

PIPELINES = {
    "gpt-2": [GPT2],
    "llama-bpe": [llama3("{1,3}")],
    "qwen2": [llama3("")],
    "qwen35": [QWEN35],
    "gpt-4o": [O200K],
    "smollm": ["\\p{N}", GPT2],
    "falcon": ["[\\p{P}\\$\\+<=>\\^~\\|`]+", GPT2, "[0-9][0-9][0-9]"],
    "default": ["[\\p{P}\\$\\+<=>\\^~\\|]+", GPT2, "\\p{N}+", "[0-9][0-9][0-9]"],
}

RANGES = [(0x20, 0x7E), (0x20, 0x20), (0x09, 0x0D), (0x27, 0x27), (0x30, 0x39), (0x00, 0x1F),
          (0x80, 0xFF), (0x300, 0x36F), (0x391, 0x3C9), (0x410, 0x44F), (0x600, 0x6FF),
          (0x900, 0x97F), (0x3040, 0x30FF), (0x4E00, 0x4FFF), (0xAC00, 0xACFF), (0x2000, 0x206F),
          (0x3000, 0x3000), (0x1680, 0x1680), (0x2160, 0x2188), (0xFF10, 0xFF5A),
          (0x1F300, 0x1F6FF), (0x1D400, 0x1D7FF), (0x0, 0xFFFF), (0x10000, 0x3FFFF),
          (0x41, 0x5A), (0x61, 0x7A), (0x1C4, 0x1CC), (0x2B0, 0x2C1), (0x2F, 0x2F)]
SNIPPETS = ["'s", "'S", "'ll", "'LL", "'re", "'Ve", " 's", "''t", "\r\n", "  \n  ", "1234567",
            "HelloWorld", "XMLHttp", "ǅa", "ʰb", "नमस्ते", "e\u0301", "\n/", "!\r\n/x"]


def split(patterns, text):
    if not text:
        return []
    if not patterns:
        return [text]
    out, gap = [], 0
    for m in regex.finditer(patterns[0], text):
        out += split(patterns[1:], text[gap:m.start()])
        out += split(patterns[1:], m.group())
        gap = m.end()
    return out + split(patterns[1:], text[gap:])


def random_text(rng):
    chars = []
    for _ in range(rng.randrange(0, 40)):
        lo, hi = rng.choice(RANGES)
        ch = chr(rng.randint(lo, hi))
        # Skip \x01 and \x02 (the separators) and what this Python's Unicode
        # database leaves unassigned (regex may know a newer version).
        if ch in "\x01\x02" or unicodedata.category(ch) in ("Cn", "Cs"):
            continue
        chars.append(ch)
        if rng.random() < 0.05:
            chars.append(rng.choice(SNIPPETS))
    return "".join(chars)


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    rng = random.Random(seed)
    texts = [random_text(rng) for _ in range(count)]
    src = os.path.join(ROOT, "engine", "tokenizer")
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "words")
        subprocess.run(["g++", "-std=c++20", "-O2", "-I" + ROOT,
                        os.path.join(HERE, "pre_tokenizer_words.cpp")] +
                       [os.path.join(src, f) for f in ("pre_tokenizer.cpp", "unicode_class.cpp",
                                                       "unicode_table.cpp", "utf8.cpp")] +
                       ["-o", exe], check=True)
        failures = 0
        for name, patterns in PIPELINES.items():
            data = "".join(t + "\x01" for t in texts).encode("utf-8")
            got = subprocess.run([exe, name], input=data, capture_output=True,
                                 check=True).stdout.decode("utf-8").split("\x01")[:-1]
            bad = 0
            for text, words in zip(texts, got):
                expected = split(patterns, text)
                actual = words.split("\x02") if words else []
                if actual != expected:
                    bad += 1
                    if bad <= 3:
                        print(f"{name}: {text!r}\n  C++:   {actual}\n  regex: {expected}")
            print(f"{name}: {len(texts) - bad} of {len(texts)} texts split alike")
            failures += bad
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
