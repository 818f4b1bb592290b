'use client';

import { useMutation } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Dialog } from '@/components/ui/dialog';
import { Field } from '@/components/ui/field';
import { fieldMessage, toApiError } from '@/lib/api-errors';
import type { Pool } from '@/lib/api-types';
import { installScriptDefaults, validateInstallScriptForm, type InstallScriptFieldErrors } from '@/lib/install-script';
import { useTRPC } from '@/lib/trpc';
import { downloadText } from '@/lib/unsaved-guard';

const WELL_KNOWN = '/api/compute/.well-known/better-compute';
const FORM_FIELDS = ['gatewayUrl', 'baseUrl'];

/** "Download install script": the pool's `install-bcd.sh` (daemon.installScript), for its bcd machines. */
export function InstallScriptButton({ pool, tenantId }: { pool: Pool; tenantId: string }) {
  const [isOpen, setOpen] = useState(false);
  return (
    <>
      <button
        type="button"
        className="btn btn-small btn-quiet"
        aria-label={`Download install script for pool ${pool.name}`}
        onClick={() => setOpen(true)}
      >
        Install script
      </button>
      <Dialog open={isOpen} onClose={() => setOpen(false)} title={`Install script for pool ${pool.name}`} size="small">
        {isOpen && <InstallScriptForm pool={pool} tenantId={tenantId} onClose={() => setOpen(false)} />}
      </Dialog>
    </>
  );
}

function InstallScriptForm({ pool, tenantId, onClose }: { pool: Pool; tenantId: string; onClose: () => void }) {
  const trpc = useTRPC();
  const [urls, setUrls] = useState<{ gatewayUrl: string; baseUrl: string } | null>(null);
  const [fieldErrors, setFieldErrors] = useState<InstallScriptFieldErrors>({});
  const generate = useMutation(
    trpc.daemon.installScript.mutationOptions({ onSuccess: (answer) => downloadText(answer.filename, answer.script) }),
  );
  // The defaults come from the well-known document the machines themselves read; a failure leaves them blank.
  useEffect(() => {
    void fetch(WELL_KNOWN)
      .then((response) => (response.ok ? response.json() : null))
      .catch(() => null)
      .then((doc) => setUrls((current) => current ?? installScriptDefaults(doc, window.location.origin)));
  }, []);
  const error = generate.error ? toApiError(generate.error) : null;
  const errorOf = (field: keyof InstallScriptFieldErrors) => fieldErrors[field] ?? (error?.field === field ? fieldMessage(error) : null);
  // An error naming a field this form has no control for (sha256: no bcd build on the server) shows as the form's.
  const formError = error && !FORM_FIELDS.includes(error.field ?? '') ? error : null;
  const values = urls ?? { gatewayUrl: '', baseUrl: '' };
  return (
    // noValidate: both fields' errors show at once in the form's own style, not one browser bubble at a time.
    <form
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        const input = { tenantId, poolId: pool.id, gatewayUrl: values.gatewayUrl.trim(), baseUrl: values.baseUrl.trim() };
        const invalid = validateInstallScriptForm(input);
        setFieldErrors(invalid);
        if (Object.keys(invalid).length === 0) generate.mutate(input);
      }}
    >
      <div className="dialog-body">
        <p>
          The script installs bcd on a machine and joins it to this pool with a join token read from standard input:{' '}
          <code>sudo sh install-bcd.sh &lt; join-token</code>.
        </p>
        <Field label="Gateway URL" hint="Where the machine renews; from the server's well-known document." error={errorOf('gatewayUrl')}>
          {(control) => (
            <input
              {...control}
              type="url"
              required
              value={values.gatewayUrl}
              onChange={(e) => setUrls({ ...values, gatewayUrl: e.target.value })}
              data-autofocus
            />
          )}
        </Field>
        <Field
          label="Base URL"
          hint="The server the script downloads bcd from: this console's origin unless machines reach it by another name."
          error={errorOf('baseUrl')}
        >
          {(control) => (
            <input
              {...control}
              type="url"
              required
              value={values.baseUrl}
              onChange={(e) => setUrls({ ...values, baseUrl: e.target.value })}
            />
          )}
        </Field>
        {generate.isSuccess && (
          <p role="status">
            Downloaded <code>{generate.data.filename}</code> (bcd {generate.data.bcdVersion}).
          </p>
        )}
      </div>
      {formError && (
        <p className="form-error" role="alert">
          {formError.message}
        </p>
      )}
      <footer className="dialog-footer">
        <button type="button" className="btn" onClick={onClose}>
          {generate.isSuccess ? 'Done' : 'Cancel'}
        </button>
        <button type="submit" className="btn btn-primary" disabled={generate.isPending || urls === null}>
          {generate.isPending ? 'Generating…' : 'Download install script'}
        </button>
      </footer>
    </form>
  );
}
