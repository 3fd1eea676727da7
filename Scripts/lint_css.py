#!/usr/bin/env python3
"""Checks CSS files strictly with tinycss2 (CSS Syntax Module Level 3): every rule and
declaration must parse without the error recovery the syntax allows (a block left open at the
end of the file, a bad string or URL, a declaration without a colon, a stray token), and each
rule must be a style rule or a known at-rule. Prints `file:line:column: message` per problem and
exits 1 when there is any. Run by Scripts/lint.sh on the dashboard's stylesheet."""
import sys

import tinycss2

# At-rules whose block holds rules (the others used here hold declarations).
RULE_BLOCKS = {"media", "supports", "keyframes"}
KNOWN_AT_RULES = RULE_BLOCKS | {"font-face", "page"}


def problems_in_declarations(tokens):
    for node in tinycss2.parse_declaration_list(tokens, skip_comments=True, skip_whitespace=True):
        if node.type == "error":
            yield node, node.message
        elif node.type == "declaration":
            for value in node.value:
                if value.type == "error":
                    yield value, value.message
            if not [v for v in node.value if v.type not in ("whitespace", "comment")]:
                yield node, f"'{node.name}' has no value"
        elif node.type in ("qualified-rule", "at-rule"):
            yield node, f"a nested {node.type} where declarations belong"


def problems_in_rules(nodes):
    for rule in nodes:
        if rule.type == "error":
            yield rule, rule.message
        elif rule.type == "qualified-rule":
            if not tinycss2.serialize(rule.prelude).strip():
                yield rule, "a rule without a selector"
            for token in rule.prelude:
                if token.type == "error":
                    yield token, f"in the selector: {token.message}"
                elif token.type == "literal" and token.value in (";", "!"):
                    yield token, f"a stray '{token.value}' in the selector"
            yield from problems_in_declarations(rule.content)
        elif rule.type == "at-rule":
            if rule.lower_at_keyword not in KNOWN_AT_RULES:
                yield rule, f"unknown at-rule @{rule.at_keyword}"
            elif rule.content is None:
                yield rule, f"@{rule.at_keyword} without a block"
            elif rule.lower_at_keyword in RULE_BLOCKS:
                yield from problems_in_rules(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True))
            else:
                yield from problems_in_declarations(rule.content)


def check(path):
    text = open(path, encoding="utf-8").read()
    found = []
    # Error recovery closes what the file left open and drops what it cannot read: a strict
    # file reads back as it was written.
    tokens = tinycss2.parse_component_value_list(text)
    if tinycss2.serialize(tokens) != text:
        found.append((1, 1, "the file does not read back as written (a block, string or comment left open)"))
    rules = tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True)
    for node, message in problems_in_rules(rules):
        found.append((node.source_line, node.source_column, message))
    for line, column, message in found:
        print(f"{path}:{line}:{column}: {message}")
    return not found


if __name__ == "__main__":
    ok = all([check(p) for p in sys.argv[1:]])
    sys.exit(0 if ok else 1)
