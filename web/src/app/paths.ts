/**
 * The chat-home routes (SPEC §2: /, /ui, /ui/, /chat, /ui/chat) get the
 * light chat page; every other path under /ui is the console's.
 */
export const isChatPath = (pathname: string) => /^(?:\/ui)?(?:\/|\/chat\/?)?$/.test(pathname);
