import { toApiError } from '@/lib/api-errors';

export function LoadingRows({ label }: { label: string }) {
  return (
    <p className="muted loading" role="status">
      {label}
    </p>
  );
}

export function QueryError({ error, what }: { error: unknown; what: string }) {
  return (
    <div className="callout callout-error" role="alert">
      <strong>Could not load {what}.</strong> {toApiError(error).message}
    </div>
  );
}
