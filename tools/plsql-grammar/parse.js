#!/usr/bin/env node
// Parses Oracle statements with the ANTLR grammars-v4 PL/SQL grammar (antlr4ts-sql's build of it).
//
// A long-lived process: one JSON request a line on stdin, {"id": ..., "text": "..."}, one answer a
// line on stdout, {"id": ..., "ok": bool, "errors": [{"line", "column", "message"}]}, in order.
// The parser's prediction cache (the DFA) is shared by every parse of the process, so later
// statements of a batch parse faster than the first.
//
// Each statement is parsed first in SLL prediction mode, bailing out at the first error; only a
// statement SLL refuses is parsed again in full LL mode, whose errors are the ones reported (SLL
// can refuse what LL accepts, never the reverse, so the verdict is LL's).
"use strict";

const readline = require("readline");
const { ANTLRInputStream, CommonTokenStream, BailErrorStrategy, DefaultErrorStrategy } = require("antlr4ts");
const { PredictionMode } = require("antlr4ts/atn/PredictionMode");
const { PlSqlLexer } = require("antlr4ts-sql/dist/src/grammar-output/plsql/PlSqlLexer");
const Module = require("module");
const fs = require("fs");
const path = require("path");

const PARSER_MODULE = require.resolve("antlr4ts-sql/dist/src/grammar-output/plsql/PlSqlParser");

// The generated parser spells each token type as a static property in ~80,000 `case` labels and bit
// tests (`case PlSqlParser.ABORT:`), which V8 evaluates one by one unless TurboFan compiles the
// function, and compiling those giant functions costs gigabytes. Folding each property into its
// number (`PlSqlParser.ABORT = 1;` gives `case 1:`) lets the interpreter jump straight to the case;
// the grammar is untouched. `--plain` loads the package's module as it is (for comparison).
function foldedParser() {
  const source = fs.readFileSync(PARSER_MODULE, "utf8");
  const values = new Map();
  for (const m of source.matchAll(/^PlSqlParser\.(\w+) = (-?\d+);$/gm)) values.set(m[1], m[2]);
  const folded = source.replace(/\bPlSqlParser\.(\w+)\b(?! =)/g, (whole, name) => values.get(name) ?? whole);
  const mod = new Module(PARSER_MODULE, module);
  mod.filename = PARSER_MODULE;
  mod.paths = Module._nodeModulePaths(path.dirname(PARSER_MODULE));
  mod._compile(folded, PARSER_MODULE);
  return mod.exports.PlSqlParser;
}

const PlSqlParser = process.argv.includes("--plain") ? require(PARSER_MODULE).PlSqlParser : foldedParser();

// The grammar's keywords are upper case: the lexer sees every character folded to upper case, while
// token texts (and so the messages) keep the statement's own spelling.
const ASCII_UPPER = Array.from({ length: 128 }, (_, c) => (c >= 97 && c <= 122 ? c - 32 : c));

class UpperCaseStream extends ANTLRInputStream {
  LA(offset) {
    const c = super.LA(offset);
    if (c < 128) return c <= 0 ? c : ASCII_UPPER[c];
    return String.fromCodePoint(c).toUpperCase().codePointAt(0);
  }
}

// "expecting {<hundreds of tokens>}" says nothing a reader can use beyond its first few.
function shorten(message) {
  return message.replace(/expecting \{([^}]*)\}/, (_whole, set) => {
    const items = set.split(", ");
    return items.length <= 8 ? `expecting {${set}}` : `expecting one of ${items.length} tokens, e.g. {${items.slice(0, 8).join(", ")}, ...}`;
  });
}

function collector(errors) {
  return {
    syntaxError(_recognizer, _symbol, line, column, message) {
      errors.push({ line, column, message: shorten(message) });
    },
  };
}

const LL_ONLY = process.argv.includes("--ll"); // skip the SLL pass (for comparison)

function parse(text) {
  const errors = [];
  const lexer = new PlSqlLexer(new UpperCaseStream(text));
  lexer.removeErrorListeners();
  lexer.addErrorListener(collector(errors));
  const tokens = new CommonTokenStream(lexer);
  tokens.fill();
  const parser = new PlSqlParser(tokens);
  parser.removeErrorListeners();
  parser.buildParseTree = false; // only the verdict is wanted: no tree to build and collect
  parser.interpreter.setPredictionMode(PredictionMode.SLL);
  parser.errorHandler = new BailErrorStrategy();
  try {
    if (LL_ONLY) throw new Error("LL only");
    parser.sql_script();
    return errors;
  } catch (_bailed) {
    tokens.seek(0);
    parser.reset();
    parser.addErrorListener(collector(errors));
    parser.errorHandler = new DefaultErrorStrategy();
    parser.interpreter.setPredictionMode(PredictionMode.LL);
    parser.sql_script();
    return errors;
  }
}

function answer(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch (exc) {
    return { id: null, ok: false, errors: [{ line: 0, column: 0, message: `bad request: ${exc.message}` }] };
  }
  const errors = parse(String(request.text));
  return { id: request.id, ok: errors.length === 0, errors };
}

const input = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on("line", (line) => {
  if (line.trim()) process.stdout.write(JSON.stringify(answer(line)) + "\n");
});
