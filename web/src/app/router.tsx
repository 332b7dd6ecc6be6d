import { lazy, Suspense, type ReactNode } from 'react';
import { createBrowserRouter, Navigate } from 'react-router';
import { AdminGate, Loading } from '../admin/AdminGate.tsx';
import { ADMIN_SCREENS } from '../admin/screens.tsx';
import { ChatPage } from '../chat/ChatPage.tsx';
import { ErrorPage } from './ErrorPage.tsx';
import { Layout } from './Layout.tsx';
import { NotFoundPage } from './NotFoundPage.tsx';

const SetupPage = lazy(() => import('../admin/auth/SetupPage.tsx'));
const LoginPage = lazy(() => import('../admin/auth/LoginPage.tsx'));

const suspended = (element: ReactNode) => <Suspense fallback={<Loading />}>{element}</Suspense>;

/** Routes of SPEC §2 under the /ui base path; console screens load lazily so the public chat stays small. */
export const router = createBrowserRouter(
  [
    {
      path: '/',
      element: <Layout />,
      errorElement: <ErrorPage />,
      children: [
        { index: true, element: <ChatPage /> },
        { path: 'chat', element: <ChatPage /> },
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
