/** Scraping a service's /metrics in tests (the format is read by @syncmesh-edge/prometheus). */
import { parseMetrics, type Sample } from '@syncmesh-edge/prometheus';

/** GETs `url` and parses it; throws on anything but a 200. */
export async function scrapeMetrics(url: string, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${text.slice(0, 200)}`);
  return parseMetrics(text);
}
