'use client';

import { useEffect, useState } from 'react';

/** The clock for "in 42 min", read every `intervalMs` (a minute by default). Tables render only in the browser, after their query. */
export function useNow(intervalMs = 60_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), intervalMs);
    return () => clearInterval(timer);
  }, [intervalMs]);
  return now;
}
