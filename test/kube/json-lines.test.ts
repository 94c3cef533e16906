import { JsonLines } from '../../kube/json-lines.js';

describe('JsonLines', () => {
  it('returns each complete line once, however the bytes are cut', () => {
    const stream = Buffer.from('{"type":"ADDED","n":1}\n{"type":"MODIFIED","n":2}\n{"type":"DELETED","n":3}\n');
    for (let cut = 1; cut < stream.length; cut++) {
      const lines = new JsonLines();
      const got = [...lines.push(stream.subarray(0, cut)), ...lines.push(stream.subarray(cut))];
      expect(got.map((l) => JSON.parse(l).n)).toEqual([1, 2, 3]);
    }
  });

  it('decodes a multi-byte character cut between two chunks', () => {
    const event = Buffer.from('{"note":"Grüße, 世界 🚀"}\n');
    const lines = new JsonLines();
    const got: string[] = [];
    // One byte at a time: every character is cut somewhere.
    for (let i = 0; i < event.length; i++) got.push(...lines.push(event.subarray(i, i + 1)));
    expect(got).toEqual(['{"note":"Grüße, 世界 🚀"}']);
  });

  it('keeps a line without its newline until the newline arrives, and leaves out blank lines', () => {
    const lines = new JsonLines();
    expect(lines.push(Buffer.from('\n\r\n{"a":'))).toEqual([]);
    expect(lines.push(Buffer.from('1}'))).toEqual([]);
    expect(lines.push(Buffer.from('\r\n\n{"b":2}\n'))).toEqual(['{"a":1}\r', '{"b":2}']);
  });

  it('does not hold on to the chunk a pending tail came in', () => {
    const chunk = Buffer.from('{"a":1}\n{"b":');
    const lines = new JsonLines();
    lines.push(chunk);
    chunk.fill(0x20);
    expect(lines.push(Buffer.from('2}\n'))).toEqual(['{"b":2}']);
  });
});
