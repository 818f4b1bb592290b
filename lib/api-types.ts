import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '@/server/api/root';

export type Outputs = inferRouterOutputs<AppRouter>;
type Inputs = inferRouterInputs<AppRouter>;

export type Tenant = Outputs['tenants']['list']['items'][number];
export type Site = Outputs['sites']['list']['items'][number];
export type Pool = Outputs['pools']['list']['items'][number];
export type CreatePoolInput = Inputs['pools']['create'];
export type UpdateSiteInput = Inputs['sites']['update'];
export type PoolAgent = CreatePoolInput['agent'];
export type JoinAttestor = NonNullable<NonNullable<CreatePoolInput['policy']>['joinAttestors']>[number];
export type Overview = Outputs['overview']['get'];
