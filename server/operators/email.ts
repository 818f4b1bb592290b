import { z } from 'zod';

/** An operator's email as stored: trimmed, lower case, at most 254 characters. */
export const operatorEmail = z.string().trim().toLowerCase().email().max(254);
