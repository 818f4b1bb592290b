/** One Server-Sent Event as the gateway writes them: a type and the JSON of its one `data:` line. */
export interface ServerEvent {
  type: string;
  data: unknown;
}

/**
 * Reads Server-Sent Events from text chunks: events end with a blank line; `event:` names the type
 * (`message` when absent), `data:` lines are joined with newlines and parsed as JSON (an event whose data is
 * not JSON is dropped: the protocol sends only JSON). Comments (`:`) and unknown fields are ignored.
 */
export class SseReader {
  private buffer = '';

  push(chunk: string): ServerEvent[] {
    this.buffer += chunk;
    const events: ServerEvent[] = [];
    for (let end = this.buffer.search(/\r?\n\r?\n/); end >= 0; end = this.buffer.search(/\r?\n\r?\n/)) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      let type = 'message';
      const data: string[] = [];
      for (const line of block.split(/\r?\n/)) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') type = value;
        else if (field === 'data') data.push(value);
      }
      if (!data.length) continue;
      try {
        events.push({ type, data: JSON.parse(data.join('\n')) });
      } catch {
        // not JSON: not an event of this protocol
      }
    }
    return events;
  }
}
