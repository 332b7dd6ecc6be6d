import type { SetupRequest, UsernameReply } from '@concierge/contract';
import { api } from './client.ts';

/** The sign-in calls themselves, without the console's query cache, so the chat's nav can sign out. */
export const createAdmin = (request: SetupRequest) => api.post<UsernameReply>('/setup', { body: request });
export const login = (username: string, password: string) => api.post<UsernameReply>('/login', { body: { username, password } });
export const logout = () => api.post<{ success: true }>('/logout');
