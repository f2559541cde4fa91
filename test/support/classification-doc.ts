import type { ClassificationRow } from '../../src/classify';

/** The table in docs/error-classification.md sits between these markers. */
export const TABLE_START =
  '<!-- table:start — rendered from src/classify/table.ts; `UPDATE_DOCS=1 npx jest test/unit/classify-table` rewrites it -->';
export const TABLE_END = '<!-- table:end -->';

const HEADER = ['code', 'when', 'class', 'retryable', 'meaning (Hono, where it defines one)', 'reason'];

/** A row as an operator reads it in the docs. */
export interface DocRow {
  code: string;
  when: string;
  class: string;
  retryable: string;
  meaning: string;
  reason: string;
}

export function renderTable(rows: readonly ClassificationRow[]): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const lines = rows.map((r) => {
    const when = r.when ?? r.packets?.map((p) => p.toUpperCase()).join(', ') ?? '';
    const retryable = r.class === 'client' || r.class === 'success' ? 'no' : 'yes';
    return `| \`${r.code}\` | ${cell(when)} | \`${r.class}\` | ${retryable} | ${cell(r.meaning)} | ${cell(r.reason)} |`;
  });
  return [`| ${HEADER.join(' | ')} |`, `|${HEADER.map(() => '---').join('|')}|`, ...lines].join('\n');
}

/** The text between the markers. */
export function tableBlock(markdown: string): string {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start < 0 || end < start) throw new Error('docs/error-classification.md has no table markers');
  return markdown.slice(start + TABLE_START.length, end).trim();
}

export function replaceTableBlock(markdown: string, table: string): string {
  const start = markdown.indexOf(TABLE_START) + TABLE_START.length;
  return `${markdown.slice(0, start)}\n\n${table}\n\n${markdown.slice(markdown.indexOf(TABLE_END))}`;
}

/** Parses the docs table back into rows, as a reader would take it. */
export function parseTable(block: string): DocRow[] {
  const [header, , ...lines] = block.split('\n').filter((l) => l.startsWith('|'));
  if (!header || splitRow(header).join('|') !== HEADER.join('|')) throw new Error(`unexpected table header: ${header}`);
  return lines.map((line) => {
    const [code, when, cls, retryable, meaning, reason] = splitRow(line).map((c) => c.replace(/^`(.*)`$/, '$1'));
    return { code: code!, when: when!, class: cls!, retryable: retryable!, meaning: meaning!, reason: reason! };
  });
}

function splitRow(line: string): string[] {
  return line
    .slice(1, -1)
    .split(/(?<!\\)\|/)
    .map((c) => c.trim().replace(/\\\|/g, '|'));
}
