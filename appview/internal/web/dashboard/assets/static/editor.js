// The code editors of the lexicon and script pages: a plain <textarea>
// with a line-number gutter and one highlighted line (an error's), and
// the helpers that find where an error is: a JSON parse error's line and
// column, the line of a path in a JSON document, the line a Lua error
// names. No editor framework.
import { APIError, call } from "./api.js";
import { el, explain, showError } from "./ui.js";

// codeEditor wraps textarea in a container with a line-number gutter and
// returns its controls: mark(line, column) highlights a line (1-based)
// and selects it, clear() removes the highlight, refresh() renumbers
// after the value was set from a script.
export function codeEditor(textarea) {
  textarea.setAttribute("wrap", "off");
  textarea.spellcheck = false;
  const gutter = el("div", { class: "nums" });
  const band = el("div", { class: "band", hidden: true });
  const wrap = el("div", { class: "code-editor" });
  textarea.replaceWith(wrap);
  wrap.append(el("div", { class: "gutter", "aria-hidden": "true" }, gutter), el("div", { class: "code-area" }, band, textarea));
  let marked = 0;

  const lineHeight = () => parseFloat(getComputedStyle(textarea).lineHeight) || 18;
  const position = () => {
    gutter.style.transform = `translateY(${-textarea.scrollTop}px)`;
    if (marked) {
      const top = (marked - 1) * lineHeight() + parseFloat(getComputedStyle(textarea).paddingTop) - textarea.scrollTop;
      band.style.transform = `translateY(${top}px)`;
    }
  };
  const refresh = () => {
    const lines = textarea.value.split("\n").length;
    if (gutter.childElementCount !== lines) {
      const nums = [];
      for (let n = 1; n <= lines; n++) nums.push(el("span", { class: n === marked ? "bad" : null, text: String(n) }));
      gutter.replaceChildren(...nums);
    }
    position();
  };
  const clear = () => {
    if (!marked) return;
    gutter.children[marked - 1]?.classList.remove("bad");
    marked = 0;
    band.hidden = true;
    wrap.removeAttribute("data-error-line");
  };
  const mark = (line, column = 0) => {
    clear();
    const lines = textarea.value.split("\n");
    if (!(line >= 1)) return;
    marked = Math.min(line, lines.length);
    refresh();
    gutter.children[marked - 1]?.classList.add("bad");
    wrap.dataset.errorLine = String(marked);
    band.hidden = false;
    // Select the line (or from the column on), and scroll it into view.
    let start = 0;
    for (let n = 0; n < marked - 1; n++) start += lines[n].length + 1;
    const end = start + lines[marked - 1].length;
    textarea.setSelectionRange(column > 0 ? Math.min(start + column - 1, end) : start, end);
    const h = lineHeight();
    const want = (marked - 1) * h;
    if (want < textarea.scrollTop || want > textarea.scrollTop + textarea.clientHeight - 2 * h) {
      textarea.scrollTop = Math.max(0, want - textarea.clientHeight / 3);
    }
    position();
  };
  textarea.addEventListener("input", () => {
    clear();
    refresh();
  });
  textarea.addEventListener("scroll", position);
  refresh();
  return { mark, clear, refresh, textarea };
}

// lineColumn returns the 1-based line and column of offset pos in text.
export function lineColumn(text, pos) {
  const before = text.slice(0, pos);
  const line = before.split("\n").length;
  return { line, column: pos - before.lastIndexOf("\n") };
}

// jsonError returns where text fails to parse as JSON, {message, line,
// column}, or null when it parses. The position is the browser's when
// its message gives one, else this module's own scan's.
export function jsonError(text) {
  try {
    JSON.parse(text);
    return null;
  } catch (err) {
    let pos = null;
    const lc = /line (\d+) column (\d+)/.exec(err.message);
    if (lc) return { message: err.message, line: Number(lc[1]), column: Number(lc[2]) };
    const p = /position (\d+)/.exec(err.message);
    if (p) pos = Number(p[1]);
    else {
      try {
        jsonLocations(text);
      } catch (scan) {
        pos = scan.position ?? null;
      }
    }
    if (pos === null) return { message: err.message, line: 0, column: 0 };
    return { message: err.message, ...lineColumn(text, pos) };
  }
}

// jsonLocations scans a JSON text and returns a Map from each member's
// dotted path ("defs.main.record", array elements by index) to the
// offset where it starts (an object member's at its key). It throws a
// SyntaxError with a position on malformed text.
export function jsonLocations(text) {
  const at = new Map([["", 0]]);
  let i = 0;
  const fail = (msg) => {
    const e = new SyntaxError(msg);
    e.position = i;
    throw e;
  };
  const ws = () => {
    while (i < text.length && " \t\r\n".includes(text[i])) i++;
  };
  const escapes = { n: "\n", t: "\t", r: "\r", b: "\b", f: "\f", '"': '"', "\\": "\\", "/": "/" };
  const string = () => {
    i++;
    let s = "";
    while (i < text.length) {
      const c = text[i];
      if (c === '"') {
        i++;
        return s;
      }
      if (c === "\\") {
        const e = text[i + 1];
        if (e === "u" && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) {
          s += String.fromCharCode(parseInt(text.slice(i + 2, i + 6), 16));
          i += 6;
        } else if (e in escapes) {
          s += escapes[e];
          i += 2;
        } else fail("invalid escape in a string");
        continue;
      }
      if (c < " ") fail("control character in a string");
      s += c;
      i++;
    }
    return fail("unterminated string");
  };
  const members = (path, close, member) => {
    i++;
    ws();
    if (text[i] === close) {
      i++;
      return;
    }
    for (let n = 0; ; n++) {
      ws();
      member(n);
      ws();
      if (text[i] === ",") {
        i++;
        continue;
      }
      if (text[i] === close) {
        i++;
        return;
      }
      fail(`expected ',' or '${close}'`);
    }
  };
  const join = (path, key) => (path === "" ? key : `${path}.${key}`);
  const value = (path) => {
    ws();
    const c = text[i];
    if (c === "{") {
      members(path, "}", () => {
        if (text[i] !== '"') fail("expected a property name");
        const start = i;
        const p = join(path, string());
        if (!at.has(p)) at.set(p, start);
        ws();
        if (text[i] !== ":") fail("expected ':'");
        i++;
        value(p);
      });
      return;
    }
    if (c === "[") {
      members(path, "]", (n) => {
        const p = join(path, String(n));
        if (!at.has(p)) at.set(p, i);
        value(p);
      });
      return;
    }
    if (c === '"') {
      string();
      return;
    }
    const m = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 512));
    if (!m) fail("unexpected character");
    i += m[0].length;
  };
  value("");
  ws();
  if (i < text.length) fail("unexpected data after the document");
  return at;
}

// luaErrorLine returns the line a Lua compile error names ("line:3(column:5)",
// "at line 3", "line(3)"), or 0, as the server's check does.
export function luaErrorLine(message) {
  const m = /line:(\d+)\(column:(\d+)\)/.exec(message) || /at line (\d+)/.exec(message) || /line\((\d+)\)/.exec(message);
  return m ? { line: Number(m[1]), column: m[2] ? Number(m[2]) : 0 } : { line: 0, column: 0 };
}

// luaFailure shows a Lua error under its editor (the textarea's
// aria-describedby box) and marks the line it names; null clears both.
export function luaFailure(editor, message) {
  if (!message) {
    showError(editor.textarea, null);
    editor.clear();
    return;
  }
  showError(editor.textarea, new Error(message));
  const { line, column } = luaErrorLine(message);
  if (line) editor.mark(line, column);
}

// wireCheck makes button check the editor's source with POST
// /admin/scripts/check: the error at its line, or that it compiles.
export function wireCheck(button, editor, okBox) {
  button.addEventListener("click", async () => {
    okBox.hidden = true;
    const source = editor.textarea.value;
    if (source.trim() === "") {
      luaFailure(editor, "There is no source to check.");
      return;
    }
    button.disabled = true;
    try {
      await call("POST", "/admin/scripts/check", { body: { source } });
      luaFailure(editor, null);
      okBox.textContent = "The syntax is valid.";
      okBox.hidden = false;
    } catch (err) {
      if (err instanceof APIError && err.status === 400) luaFailure(editor, err.message);
      else {
        editor.clear();
        showError(editor.textarea, new Error(explain(err, "scripts:read")));
      }
    } finally {
      button.disabled = false;
    }
  });
}
