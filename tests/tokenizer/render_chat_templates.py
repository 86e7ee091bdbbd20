#!/usr/bin/env python3
"""Renders chat templates with Python's jinja2, as Hugging Face's
apply_chat_template does, for test_chat_template_jinja to compare kvscope's
renders with, byte for byte.

The environment is transformers' (utils/chat_template_utils.py): a sandboxed
environment with trim_blocks, lstrip_blocks and the loopcontrols extension;
`tojson` is json.dumps(ensure_ascii=False, ...), `raise_exception` raises,
`strftime_now(fmt)` formats the local time. That time is the case's "now"
(seconds since the epoch) instead of the clock, so both sides format the
same instant.

Input (a file named on the command line): {"cases": [{"template": TEXT,
"variables": {...}, "now": SECONDS}, ...]}. Output (stdout): a JSON list
with, for each case, {"text": RENDERED} or {"error": MESSAGE}.
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def environment(now):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.fromtimestamp(now).strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render(case):
    try:
        template = environment(case["now"]).from_string(case["template"])
        return {"text": template.render(**case["variables"])}
    except jinja2.exceptions.TemplateError as e:
        return {"error": str(e)}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    json.dump([render(c) for c in cases], sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
