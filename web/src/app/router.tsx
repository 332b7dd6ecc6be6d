import { lazy, Suspense, useEffect, type ReactNode } from 'react';
import { createBrowserRouter, Navigate } from 'react-router';
import { AdminGate, Loading } from '../admin/AdminGate.tsx';
import { ADMIN_SCREENS } from '../admin/screens.tsx';
import { ErrorPage } from './ErrorPage.tsx';
import { Layout } from './Layout.tsx';
import { CHAT_URL } from './nav.ts';
import { NotFoundPage } from './NotFoundPage.tsx';

const SetupPage = lazy(() => import('../admin/auth/SetupPage.tsx'));
const LoginPage = lazy(() => import('../admin/auth/LoginPage.tsx'));

function ToChat() {
  useEffect(() => window.location.replace(CHAT_URL), []);
  return <Loading />;
}

const suspended = (element: ReactNode) => <Suspense fallback={<Loading />}>{element}</Suspense>;

/** The console's routes of SPEC §2 under the /ui base path; its screens load lazily. */
export const router = createBrowserRouter(
  [
    {
      path: '/',
      element: <Layout />,
      errorElement: <ErrorPage />,
      children: [
        // The chat is its own light page (web/src/chat/), not a console screen: going there loads it.
        { index: true, element: <ToChat /> },
        { path: 'chat', element: <ToChat /> },
        {
          path: 'admin',
          element: <AdminGate />,
          errorElement: <ErrorPage />,
          children: [
            { index: true, element: <Navigate to="/admin/status" replace /> },
            { path: 'setup', element: suspended(<SetupPage />) },
            { path: 'login', element: suspended(<LoginPage />) },
            ...ADMIN_SCREENS.map(({ path, title, page: Page }) => ({ path, element: suspended(<Page title={title} />) })),
            { path: '*', element: <NotFoundPage /> },
          ],
        },
        { path: '*', element: <NotFoundPage /> },
      ],
    },
  ],
  { basename: '/ui' },
);
