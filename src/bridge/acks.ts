/**
 * One connection's QoS 1 acknowledgements, sent in the order the messages came: MQTT requires PUBACKs in
 * the order of their PUBLISHes (MQTT 5.0 §4.6), and a broker that takes an acknowledgement as "this one and
 * everything before it" must never see one for a message whose delivery was not yet accepted. A message
 * settled early waits for those before it.
 */
export class AckQueue {
  /** Packet ids in arrival order, with the reason code once settled. */
  private readonly queue: { packetId: number; reasonCode: number | undefined }[] = [];
  private closed = false;

  constructor(private readonly send: (packetId: number, reasonCode: number) => void) {}

  /** A message came: its acknowledgement goes once it and every message before it are settled. */
  receive(packetId: number): (reasonCode: number) => void {
    const entry: { packetId: number; reasonCode: number | undefined } = { packetId, reasonCode: undefined };
    this.queue.push(entry);
    return (reasonCode) => {
      if (entry.reasonCode !== undefined) return;
      entry.reasonCode = reasonCode;
      this.flush();
    };
  }

  /** Messages received and not yet acknowledged. */
  get pending(): number {
    return this.queue.length;
  }

  /** The connection is gone: nothing more is sent (the broker resends what was not acknowledged). */
  close(): void {
    this.closed = true;
    this.queue.length = 0;
  }

  private flush(): void {
    while (!this.closed && this.queue[0]?.reasonCode !== undefined) {
      const head = this.queue.shift()!;
      this.send(head.packetId, head.reasonCode!);
    }
  }
}
