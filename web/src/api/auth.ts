import type { SetupStatus, UsernameReply } from '@concierge/contract';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, api } from './client.ts';

export const authKeys = {
  setup: ['setup-status'] as const,
  me: ['logged-in'] as const,
};

/** Whether first-time setup is still needed. A failed check counts as "not required" (SPEC §2). */
export function useSetupStatus() {
  return useQuery({
    queryKey: authKeys.setup,
    queryFn: async () => {
      try {
        return await api.get<SetupStatus>('/setup/status', { timeoutMs: 10_000 });
      } catch {
        return { required: false };
      }
    },
    staleTime: 60_000,
  });
}

/** The signed-in admin's name, or null. A failed check counts as signed out (SPEC §2). */
export function useLoggedIn(enabled = true) {
  return useQuery({
    queryKey: authKeys.me,
    queryFn: async () => {
      try {
        return (await api.get<UsernameReply>('/api/logged_in', { timeoutMs: 10_000 })).username;
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) return null;
        return null;
      }
    },
    enabled,
    staleTime: 60_000,
  });
}

export { createAdmin, login, logout } from './auth-requests.ts';

/** Forgets the signed-in state (after logout or a 401). */
export function useForgetLogin() {
  const client = useQueryClient();
  return () => {
    client.setQueryData(authKeys.me, null);
    client.removeQueries({ predicate: (query) => query.queryKey[0] !== authKeys.me[0] && query.queryKey[0] !== authKeys.setup[0] });
  };
}
