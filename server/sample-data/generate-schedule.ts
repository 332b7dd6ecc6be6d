/**
 * Writes schedule.ics: the made-up "Starfall Con 2026" schedule bundled with
 * the product (the default CRAWLER_URL), in the shape Sched and Guidebook
 * export — TZID times, CATEGORIES for the track, speakers as X-SPEAKERS and
 * ATTENDEE;CN lines, folded lines, a recurring item, cancelled and moved items.
 *
 *   node server/sample-data/generate-schedule.ts
 *
 * The output is deterministic (fixed tables and a seeded generator, no clock),
 * so the file and its hash only change when this script does. The dates are
 * fixed (Friday 13 – Monday 16 March 2026); the product moves them to the
 * coming Friday when it reads the bundled file.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ZONE = 'America/Chicago';
const DAYS = ['20260313', '20260314', '20260315', '20260316'] as const; // Fri, Sat, Sun, Mon
const DTSTAMP = '20260301T120000Z';

/** A small deterministic generator (mulberry32) so "random" choices never change. */
function seeded(seed: number) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = seeded(20260313);
const pick = <T,>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;

const FIRST = ['Mira', 'Juan', 'Aiko', 'Tobias', 'Priya', 'Declan', 'Sofia', 'Kenji', 'Leila', 'Marcus', 'Ingrid', 'Rafael', 'Yuki', 'Noor', 'Elliot', 'Camille', 'Dmitri', 'Zara', 'Hugo', 'Amara', 'Felix', 'Rosa', 'Oskar', 'Talia', 'Quinn', 'Beatriz', 'Ravi', 'Saoirse', 'Wendell', 'Hana'];
const LAST = ['Okafor', 'Pérez', 'Tanaka', 'Lindqvist', 'Raman', 'Byrne', 'Castellano', 'Moreau', 'Haddad', 'Whitfield', 'Nakamura', 'Oyelaran', 'Kowalski', 'Brennan', 'Ferreira', 'Abernathy', 'Solberg', 'Mbeki', 'Delacroix', 'Vance'];

/** 90 distinct invented names. */
const PEOPLE: string[] = [];
for (let i = 0; PEOPLE.length < 90; i++) {
  const name = `${FIRST[i % FIRST.length]} ${LAST[(i * 7 + Math.floor(i / FIRST.length)) % LAST.length]}`;
  if (!PEOPLE.includes(name)) PEOPLE.push(name);
}

/** Guests of honour: panels, autograph sessions, photo ops. */
const GUESTS = [
  { name: 'Mira Okafor', role: 'voice actor (Captain Vey in "Starfall Drift")' },
  { name: 'Juan Pérez', role: 'costume designer and three-time cosplay champion' },
  { name: 'Aiko Tanaka', role: 'manga artist ("Paper Lanterns")' },
  { name: 'Tobias Lindqvist', role: 'science-fiction novelist ("The Long Orbit")' },
  { name: 'Priya Raman', role: 'game director ("Ember Vale")' },
  { name: 'Declan Byrne', role: 'comic writer ("Night Shift Knights")' },
  { name: 'Sofia Castellano', role: 'composer of video-game soundtracks' },
  { name: 'Kenji Moreau', role: 'animation director' },
];

const PANEL_ROOMS = ['Hall A', 'Hall C', 'Ballroom 1', 'Ballroom 2', 'Ballroom 3', 'Room 101', 'Room 102', 'Room 103', 'Room 104', 'Room 105', 'Room 106', 'Room 107', 'Room 108', 'Room 109'];

interface Track {
  name: string;
  rooms: string[];
  titles: string[];
  blurbs: string[];
}

const TRACKS: Track[] = [
  {
    name: 'Anime',
    rooms: ['Hall A', 'Room 101', 'Room 102'],
    titles: ['Anime of the Season Roundup', 'Mecha Design 101', 'Studio Spotlight: Hand-Drawn in a Digital Age', 'Isekai: Why Everyone Gets Hit by a Truck', 'Subs vs. Dubs: The Friendly Debate', 'Anime Trivia Showdown', 'Forgotten Gems of the 1990s', 'Slice-of-Life and Why It Heals', 'Opening Themes That Changed Everything', 'Sakuga Breakdown: Frame by Frame', 'Magical Girls Through the Decades', 'Anime Tourism: Visiting Real-World Locations'],
    blurbs: ['A lively, clip-filled look at {topic} with plenty of time for audience questions.', 'Fans and creators dig into {topic}. Expect hot takes and a few surprises.', 'Bring your favourites: this discussion of {topic} is as much yours as the panel\'s.'],
  },
  {
    name: 'Gaming',
    rooms: ['Gaming Hall', 'Room 103', 'Ballroom 2'],
    titles: ['Speedrunning Live: Any% Showcase', 'Indie Games You Missed', 'Retro Console Repair Clinic', 'Designing Boss Fights', 'Esports for Beginners', 'The Art of the Game Trailer', 'Co-op Chaos Tournament', 'Fighting Game Fundamentals', 'Pixel Art Masterclass', 'Soundtracks That Level You Up', 'Game Preservation Matters', 'Ember Vale: Behind the Scenes'],
    blurbs: ['{topic} — hands-on, loud and welcoming to newcomers.', 'Developers and players talk {topic}. Controllers welcome.', 'Everything you wanted to know about {topic}, with live demos.'],
  },
  {
    name: 'Cosplay',
    rooms: ['Room 110', 'Ballroom 1', 'Room 104'],
    titles: ['Worbla and Foam: Armor Basics', 'Wig Styling Workshop', 'Cosplay on a Budget', 'Sewing for Cosplayers', 'LED Props Without Tears', 'Cosplay Photography Tips', 'Makeup Effects for Fantasy Races', 'Cosplay Is Not Consent: Con Etiquette', 'Competition Craftsmanship Judging Explained', 'Weathering and Battle Damage'],
    blurbs: ['A practical session on {topic}. Materials are provided for the first 30 people.', 'Learn {topic} from people who have done it the hard way.', '{topic}: tips, tricks and disasters to avoid, with examples on stage.'],
  },
  {
    name: 'Comics',
    rooms: ['Room 105', 'Hall C'],
    titles: ['Webcomics: From Hobby to Career', 'Night Shift Knights Q&A', 'Inking Techniques Live', 'The Golden Age Revisited', 'Writing Team Books', 'Indie Press Showcase', 'Lettering: The Invisible Art', 'Comics for Young Readers'],
    blurbs: ['Creators share how they approach {topic}.', 'A conversation about {topic}, with sketches projected live.', 'From script to page: {topic}.'],
  },
  {
    name: 'Sci-Fi & Fantasy Literature',
    rooms: ['Room 106', 'Room 107'],
    titles: ['Worldbuilding Without the Info Dump', 'The Long Orbit: A Reading', 'Hard SF vs. Space Opera', 'Writing Believable Magic Systems', 'Getting Published in 2026', 'Short Fiction Markets', 'Found Family in Fantasy', 'Climate Futures in Fiction', 'Villains We Love to Hate', 'Audiobooks and Narration'],
    blurbs: ['Authors discuss {topic} and take questions.', 'A candid panel on {topic}, with book recommendations.', '{topic}: craft talk for readers and writers alike.'],
  },
  {
    name: 'Tabletop',
    rooms: ['Room 108', 'Room 109', 'Gaming Hall'],
    titles: ['Learn to Play: Starship Skirmish', 'Game Master Tips for New GMs', 'Miniature Painting Basics', 'Board Game Design Workshop', 'One-Shot Horror RPG', 'Dice Goblin Marketplace Tour', 'Legacy Games Explained', 'Open Gaming Tournament Qualifier'],
    blurbs: ['Sit down and play: {topic}. Tables fill up fast.', '{topic} — no experience needed, all materials provided.', 'A session on {topic} for tabletop fans of every level.'],
  },
  {
    name: 'Art & Craft',
    rooms: ['Artist Alley', 'Room 102'],
    titles: ['Sketch Duel', 'Character Design Critique', 'Digital Painting Speedrun', 'Commission Pricing for Artists', 'Button and Pin Making', 'Zine Making Workshop', 'Watercolor Fan Art'],
    blurbs: ['{topic} in Artist Alley — watch, learn and try it yourself.', 'Artists share their process for {topic}.', 'A relaxed, hands-on {topic} session.'],
  },
  {
    name: 'Music',
    rooms: ['Hall B', 'Ballroom 3'],
    titles: ['Video Game Orchestra Rehearsal Peek', 'Chiptune Live Set', 'Filk Circle', 'Composing for Games with Sofia Castellano', 'Anime Songs Sing-Along'],
    blurbs: ['{topic}: bring your voice and your requests.', 'Live music and stories — {topic}.', 'An intimate session on {topic}.'],
  },
  {
    name: 'Fan Community',
    rooms: ['Room 103', 'Room 106', 'Hall C'],
    titles: ['Fanfiction Writers Meetup', 'Running a Fan Club', 'LGBTQ+ Fans Meetup', 'First-Time Con-Goers Orientation', 'Fan Podcasting 101', 'Accessibility at Cons', 'Con Staff Q&A', 'Pet Costume Parade'],
    blurbs: ['Meet fellow fans: {topic}.', '{topic} — a friendly, open discussion.', 'Community-run: {topic}.'],
  },
  {
    name: 'Kids',
    rooms: ['Room 104', 'Room 101'],
    titles: ['Kids Costume Craft Corner', 'Story Time with Aiko Tanaka', 'Junior Game Designers', 'Superhero Training Academy', 'Draw Your Own Creature'],
    blurbs: ['For ages 6–12 with a grown-up: {topic}.', 'Family-friendly fun: {topic}.', '{topic}. Little ones welcome.'],
  },
];

interface Event {
  uid: string;
  day: number;
  start: string; // HHMM
  end: string | null; // HHMM, may be next day (suffix "+")
  duration?: string;
  title: string;
  room: string;
  track: string;
  speakers: string[];
  description: string;
  status?: 'CANCELLED';
  rrule?: string;
}

const events: Event[] = [];
let serial = 0;
const uid = () => `starfall-2026-${String(++serial).padStart(4, '0')}@sched.example.org`;

function add(event: Omit<Event, 'uid'>) {
  events.push({ uid: uid(), ...event });
}

// Main events, parties and the costume contest.
add({ day: 0, start: '1000', end: '1100', title: 'Opening Ceremony', room: 'Main Stage', track: 'Main Events', speakers: GUESTS.slice(0, 4).map((g) => g.name), description: 'Welcome to Starfall Con 2026! Meet the guests of honour, hear what is new this year and get the <b>weekend highlights</b> in ten minutes flat.' });
add({ day: 3, start: '1300', end: '1400', title: 'Closing Ceremony', room: 'Main Stage', track: 'Main Events', speakers: GUESTS.slice(4).map((g) => g.name), description: 'Thank-yous, the costume contest winners on stage one last time, and the dates for next year.' });
add({ day: 0, start: '2100', end: '0100+', title: 'Friday Night Rave', room: 'Hall B', track: 'Music', speakers: ['DJ Nebula'], description: 'Glow sticks, lasers and anime remixes until 1 am. 18+ after 23:00; ID checked at the door.' });
add({ day: 0, start: '1900', end: '2030', title: 'Chiptune Warm-Up Set', room: 'Hall B', track: 'Music', speakers: ['DJ Nebula', 'Hugo Delacroix'], description: 'Eight-bit beats to start the weekend.' });
add({ day: 1, start: '1700', end: '1830', title: 'Anime Music Video Showcase', room: 'Hall B', track: 'Anime', speakers: ['Kenji Moreau', 'Zara Brennan'], description: 'The best fan-made AMVs of the year on the big screen, with the audience award announced at the end.' });
add({ day: 1, start: '1845', end: '2030', title: 'Lip Sync Battle', room: 'Hall B', track: 'Fan Community', speakers: ['Quinn Whitfield'], description: 'Sign up at the Hall B door from 18:00. Costumes encouraged, shame optional.' });
add({ day: 1, start: '2100', end: '0200+', title: 'Starfall Nights Dance', room: 'Hall B', track: 'Music', speakers: ['DJ Nebula', 'DJ Solstice'], description: 'The big Saturday night dance party — cosplay welcome, 18+ after 23:00.' });
add({ day: 1, start: '2000', end: '2300', title: 'Karaoke Night', room: 'Room 104', track: 'Music', speakers: ['Rosa Nakamura'], description: 'Anime, games and musicals. The song list is at the door; duets strongly encouraged.' });
add({ day: 2, start: '2000', end: '2300', title: 'Board Game Night', room: 'Gaming Hall', track: 'Tabletop', speakers: ['Oskar Solberg'], description: 'Borrow from the game library (300+ titles) and play until late.' });
add({ day: 1, start: '1300', end: '1700', title: 'Costume Contest Prejudging', room: 'Room 110', track: 'Cosplay', speakers: ['Juan Pérez', 'Camille Abernathy'], description: 'Craftsmanship judging for Costume Contest entrants. Arrive at your booked slot with your reference images.' });
add({ day: 1, start: '1900', end: '2130', title: 'Costume Contest', room: 'Main Stage', track: 'Cosplay', speakers: ['Juan Pérez', 'Mira Okafor', 'Camille Abernathy'], description: 'The main event: over 60 entrants across Novice, Journeyman and Master divisions. Doors open 18:30; seating is first come, first served.' });
add({ day: 0, start: '0800', end: '0900', title: 'Morning Yoga', room: 'Pool Deck', track: 'Fan Community', speakers: ['Talia Raman'], description: 'Gentle stretching for tired con legs. Mats provided; in Ballroom 3 if it rains.', rrule: 'FREQ=DAILY;COUNT=3' });
add({ day: 2, start: '1400', end: '1530', title: 'Masquerade Walk-On', room: 'Main Stage', track: 'Cosplay', speakers: ['Juan Pérez'], description: 'No judging, just applause: everyone in costume can cross the stage.' });
add({ day: 2, start: '1100', end: '1200', title: 'Charity Auction', room: 'Hall A', track: 'Main Events', speakers: ['Declan Byrne', 'Leila Haddad'], description: 'Signed art, props and one-of-a-kind items. All proceeds go to the children\'s hospital.' });
add({ day: 1, start: '1000', end: null, title: 'Dealers Room Opens', room: 'Exhibit Hall', track: 'Main Events', speakers: [], description: 'Over 150 vendors. Open Saturday 10:00–19:00.' });

// Guests of honour: a spotlight panel and autograph sessions each.
GUESTS.forEach((guest, index) => {
  const day = index % 3;
  add({ day, start: `${11 + (index % 4)}00`, end: `${12 + (index % 4)}00`, title: `Spotlight: ${guest.name}`, room: 'Main Stage', track: 'Main Events', speakers: [guest.name], description: `An hour with ${guest.name}, ${guest.role}. Questions from the floor in the second half.` });
  add({ day: (day + 1) % 3, start: `${13 + (index % 3)}00`, end: `${14 + (index % 3)}30`, title: `Autographs: ${guest.name}`, room: 'Autograph Area', track: 'Autographs', speakers: [guest.name], description: `${guest.name} signs in the Autograph Area. Free with your badge; one item per person per pass through the line.` });
  add({ day: (day + 2) % 3, start: '1600', end: '1700', title: `Photo Op: ${guest.name}`, room: 'Photo Studio', track: 'Autographs', speakers: [guest.name], description: `Professional photos with ${guest.name}. Tickets at the Photo Studio desk.` });
});

// Regular programming: fill rooms hour by hour from each track's titles.
const hours: Record<number, number[]> = { 0: [11, 12, 13, 14, 15, 16, 17], 1: [9, 10, 11, 12, 13, 14, 15, 16], 2: [9, 10, 11, 12, 13, 14, 15], 3: [9, 10, 11] };
const used = new Set<string>();
const titleCursor = new Map<string, number>();
for (const [dayText, dayHours] of Object.entries(hours)) {
  const day = Number(dayText);
  for (const hour of dayHours) {
    const busyRooms = new Set<string>();
    for (let slot = 0; slot < 5; slot++) {
      const track = TRACKS[(hour * 3 + day * 5 + slot) % TRACKS.length]!;
      const room = track.rooms.find((candidate) => !busyRooms.has(candidate)) ?? PANEL_ROOMS.find((candidate) => !busyRooms.has(candidate))!;
      busyRooms.add(room);
      const cursor = titleCursor.get(track.name) ?? 0;
      titleCursor.set(track.name, cursor + 1);
      let title = track.titles[cursor % track.titles.length]!;
      if (used.has(title)) title = `${title} (Encore)`;
      if (used.has(title)) continue;
      used.add(title);
      const speakerCount = 1 + Math.floor(random() * 3);
      const speakers: string[] = [];
      while (speakers.length < speakerCount) {
        const person = pick(PEOPLE.slice(8));
        if (!speakers.includes(person)) speakers.push(person);
      }
      const long = random() < 0.5 ? 60 : 45;
      const end = `${String(hour + (long === 60 ? 1 : 0)).padStart(2, '0')}${long === 60 ? '00' : '45'}`;
      add({
        day,
        start: `${String(hour).padStart(2, '0')}00`,
        end,
        title,
        room,
        track: track.name,
        speakers,
        description: pick(track.blurbs).replace('{topic}', title.toLowerCase()),
      });
    }
  }
}

// A few cancellations and room moves, as a real schedule has by the weekend.
const cancel = (title: string, reason: string) => {
  const event = events.find((candidate) => candidate.title === title);
  if (!event) throw new Error(`no event named ${title}`);
  event.status = 'CANCELLED';
  event.title = `CANCELLED: ${event.title}`;
  event.description = `${reason} ${event.description}`;
};
cancel('Esports for Beginners', 'Cancelled — the presenter could not travel.');
cancel('Legacy Games Explained', 'Cancelled; see Board Game Night instead.');
cancel('Fan Podcasting 101', 'Cancelled due to a scheduling conflict.');
const move = (title: string, room: string) => {
  const event = events.find((candidate) => candidate.title === title);
  if (!event) throw new Error(`no event named ${title}`);
  event.description = `MOVED to ${room} (was ${event.room}). ${event.description}`;
  event.room = room;
};
move('Worbla and Foam: Armor Basics', 'Room 105');
move('Writing Believable Magic Systems', 'Ballroom 3');
move('Anime Trivia Showdown', 'Hall C');

// ---------------------------------------------------------------------------
// iCalendar output

/** RFC 5545 text escaping. */
const escapeText = (text: string) => text.replace(/\\/g, '\\\\').replace(/;/g, '\\;').replace(/,/g, '\\,').replace(/\n/g, '\\n');

/** Folds a content line at 75 octets without splitting a UTF-8 character. */
function fold(line: string): string {
  const out: string[] = [];
  let current = '';
  let octets = 0;
  for (const char of line) {
    const size = Buffer.byteLength(char);
    const limit = out.length === 0 ? 75 : 74; // continuation lines start with a space
    if (octets + size > limit) {
      out.push(current);
      current = '';
      octets = 0;
    }
    current += char;
    octets += size;
  }
  out.push(current);
  return out.join('\r\n ');
}

function dateOf(dayIndex: number, hhmm: string): string {
  const nextDay = hhmm.endsWith('+');
  const time = hhmm.replace('+', '');
  const day = DAYS[dayIndex]!;
  if (!nextDay) return `${day}T${time}00`;
  const date = new Date(Date.UTC(Number(day.slice(0, 4)), Number(day.slice(4, 6)) - 1, Number(day.slice(6, 8)) + 1));
  return `${date.toISOString().slice(0, 10).replace(/-/g, '')}T${time}00`;
}

const lines: string[] = [
  'BEGIN:VCALENDAR',
  'VERSION:2.0',
  'PRODID:-//Starfall Con//Schedule Export 4.2//EN',
  'CALSCALE:GREGORIAN',
  'METHOD:PUBLISH',
  'X-WR-CALNAME:Starfall Con 2026',
  `X-WR-TIMEZONE:${ZONE}`,
  'X-WR-CALDESC:The full programme of Starfall Con 2026\\, a fan convention for anime\\, games\\, comics and sci-fi.',
  'BEGIN:VTIMEZONE',
  `TZID:${ZONE}`,
  'BEGIN:DAYLIGHT',
  'TZOFFSETFROM:-0600',
  'TZOFFSETTO:-0500',
  'TZNAME:CDT',
  'DTSTART:19700308T020000',
  'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU',
  'END:DAYLIGHT',
  'BEGIN:STANDARD',
  'TZOFFSETFROM:-0500',
  'TZOFFSETTO:-0600',
  'TZNAME:CST',
  'DTSTART:19701101T020000',
  'RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=1SU',
  'END:STANDARD',
  'END:VTIMEZONE',
];

const ordered = [...events].sort((a, b) => a.day - b.day || a.start.localeCompare(b.start) || a.title.localeCompare(b.title));
for (const event of ordered) {
  const description = event.speakers.length ? `${event.description}\n\nSpeakers: ${event.speakers.join(', ')}` : event.description;
  lines.push('BEGIN:VEVENT');
  lines.push(`UID:${event.uid}`);
  lines.push(`DTSTAMP:${DTSTAMP}`);
  lines.push(`DTSTART;TZID=${ZONE}:${dateOf(event.day, event.start)}`);
  if (event.end) lines.push(`DTEND;TZID=${ZONE}:${dateOf(event.day, event.end)}`);
  if (event.rrule) lines.push(`RRULE:${event.rrule}`);
  lines.push(`SUMMARY:${escapeText(event.title)}`);
  lines.push(`LOCATION:${escapeText(event.room)}`);
  lines.push(`CATEGORIES:${escapeText(event.track)}`);
  if (event.speakers.length) lines.push(`X-SPEAKERS:${escapeText(event.speakers.join(', '))}`);
  for (const speaker of event.speakers) lines.push(`ATTENDEE;CN="${speaker}";ROLE=CHAIR:mailto:guests@starfallcon.example.org`);
  lines.push(`DESCRIPTION:${escapeText(description)}`);
  lines.push(`URL:https://starfallcon.example.org/schedule/${event.uid.split('@')[0]}`);
  lines.push(`STATUS:${event.status ?? 'CONFIRMED'}`);
  lines.push('END:VEVENT');
}
lines.push('END:VCALENDAR');

const output = `${lines.map(fold).join('\r\n')}\r\n`;
const target = path.join(path.dirname(fileURLToPath(import.meta.url)), 'schedule.ics');
writeFileSync(target, output);

const speakers = new Set(events.flatMap((event) => event.speakers));
const rooms = new Set(events.map((event) => event.room));
const tracks = new Set(events.map((event) => event.track));
console.log(`${target}: ${events.length} VEVENTs (one recurring), ${tracks.size} tracks, ${rooms.size} rooms, ${speakers.size} speakers`);
