import type { Metadata } from 'next';
import { ApprovalRulesView } from '@/components/approval-rules/approval-rules-view';

export const metadata: Metadata = { title: 'Approval rules' };

export default function ApprovalRulesPage() {
  return <ApprovalRulesView />;
}
