import { ROLES, type Role } from '@/protocol/api/permissions';

export type { Role };

/** What each role may do, in the words of the console's role pickers. */
export const ROLE_HINTS: Record<Role, string> = {
  admin: 'everything, including pools, sites, API keys and operators',
  operator: 'join tokens, join requests and node actions',
  approver: 'decides join requests, nothing else',
  viewer: 'reads only',
};

export function RoleSelect({
  value,
  onChange,
  id,
  disabled,
  ...aria
}: {
  value: Role;
  onChange: (role: Role) => void;
  id?: string;
  disabled?: boolean;
  'aria-label'?: string;
  'aria-describedby'?: string;
  'aria-invalid'?: boolean;
}) {
  return (
    <select id={id} value={value} disabled={disabled} onChange={(event) => onChange(event.target.value as Role)} {...aria}>
      {ROLES.map((role) => (
        <option key={role} value={role}>
          {role}
        </option>
      ))}
    </select>
  );
}
