// Model and user text → safe HTML. marked parses, highlight.js colours code, DOMPurify removes
// anything that could run (raw HTML from the model is text to us, never markup: event
// handlers, script, iframes and javascript:/data: links are stripped). Links open in a new
// tab without an opener or a referrer. An image is shown as a link to it, never loaded: the
// model's text could otherwise draw anything on the page (a data: picture of a button) or make
// the viewer's browser fetch this site's own routes with the viewer's cookie.
import DOMPurify from 'dompurify';
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import diff from 'highlight.js/lib/languages/diff';
import go from 'highlight.js/lib/languages/go';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import sql from 'highlight.js/lib/languages/sql';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { Marked, type Tokens } from 'marked';

// The languages coding agents show most; others render as plain code.
const LANGUAGES = { bash, css, diff, go, javascript, json, markdown, python, rust, sql, typescript, xml, yaml };
for (const [name, lang] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, lang);
for (const [alias, name] of [
  ['sh', 'bash'],
  ['shell', 'bash'],
  ['js', 'javascript'],
  ['ts', 'typescript'],
  ['tsx', 'typescript'],
  ['jsx', 'javascript'],
  ['html', 'xml'],
  ['py', 'python'],
  ['yml', 'yaml'],
  ['md', 'markdown'],
] as const) {
  hljs.registerAliases(alias, { languageName: name });
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function highlight(code: string, lang: string): string {
  if (lang !== '' && hljs.getLanguage(lang) !== undefined)
    return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
  return escapeHtml(code);
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  renderer: {
    code({ text, lang }: Tokens.Code): string {
      const language = (lang ?? '').trim().split(/\s+/)[0]?.toLowerCase() ?? '';
      const label = language === '' ? 'code' : escapeHtml(language);
      return (
        `<div class="code-block"><div class="code-head"><span>${label}</span>` +
        `<button type="button" class="copy-code" aria-label="Copy code">Copy</button></div>` +
        `<pre><code class="hljs">${highlight(text, language)}</code></pre></div>`
      );
    },
    // Raw HTML in the text is shown as text, not dropped: a model explaining HTML stays readable.
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(text);
    },
    // The link keeps to the links' rules (a data: or javascript: target leaves the text alone).
    image({ href, text }: Tokens.Image): string {
      return `<a href="${escapeHtml(href)}">${escapeHtml(text === '' ? href : text)}</a>`;
    },
  },
});

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A' && node.hasAttribute('href')) {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
});

const PURIFY = {
  // http(s), mailto and in-page links only; no javascript:, data: or other schemes.
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#|\/(?!\/))/i,
  FORBID_TAGS: ['img', 'style', 'form', 'input', 'textarea', 'select', 'iframe', 'object', 'embed', 'svg', 'math'],
  FORBID_ATTR: ['style'],
};

export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false });
  return DOMPurify.sanitize(html, PURIFY);
}
