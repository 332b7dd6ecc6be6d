import { describe, expect, it } from 'vitest';
import { SearchIndex } from './search-index.ts';

const STOP = new Set(['the', 'a', 'of', 'in', 'and']);
const tokenize = (text: string) => text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
const processTerm = (word: string) => (STOP.has(word) ? null : word);

function indexOf(documents: [title: string, body: string][], boost: Record<string, number> = {}) {
  const index = new SearchIndex({ fields: ['title', 'body'], boost, tokenize, processTerm });
  for (const document of documents) index.add(document);
  index.seal();
  return index;
}

const ids = (hits: { id: number }[]) => hits.map((hit) => hit.id);

describe('the offline assistant\'s search index', () => {
  const documents: [string, string][] = [
    ['Costume Contest', 'The main event of the weekend, with prizes in every division.'],
    ['Costume Repair Station', 'Glue guns, thread and safety pins for costume emergencies.'],
    ['Stargazing on the Roof', 'Telescopes provided; bring warm clothes.'],
    ['Retro Gaming Tournament', 'Bring your own controller. Prizes for the top three.'],
  ];

  it('finds documents by their words, rare words weighing more and titles as boosted', () => {
    const index = indexOf(documents, { title: 3 });
    expect(ids(index.search([['telescopes']], 'OR'))).toEqual([2]);
    // "costume" is in two titles and one body; the document with it in the title and the body ranks first.
    expect(ids(index.search([['costume']], 'OR'))).toEqual([1, 0]);
    // A rare word outweighs a common one: "prizes" is in two documents, "division" in one.
    expect(index.search([['prizes', 'division']], 'OR')[0]!.id).toBe(0);
    expect(index.has('telescopes')).toBe(true);
    expect(index.has('the')).toBe(false);
    expect(index.documentsWith('prizes')).toBe(2);
    expect(index.documentsWith('quidditch')).toBe(0);
  });

  it('combines groups with AND (every group) or OR (any word), and counts documents matching more words higher', () => {
    const index = indexOf(documents);
    expect(ids(index.search([['costume'], ['repair']], 'AND'))).toEqual([1]);
    expect(ids(index.search([['costume'], ['telescopes']], 'AND'))).toEqual([]);
    expect(ids(index.search([['costume'], ['telescopes']], 'OR')).sort()).toEqual([0, 1, 2]);
    const both = index.search([['prizes'], ['controller']], 'OR');
    expect(both[0]!.id).toBe(3);
    expect(both[0]!.queryTerms.sort()).toEqual(['controller', 'prizes']);
  });

  it('matches longer words a query word starts and words a typo away, below an exact match', () => {
    const index = indexOf([
      ['Tournament', 'Finals.'],
      ['Tournaments', 'Every day.'],
      ['Tournamant', 'A misprint in the feed.'],
    ]);
    const hits = index.search([['tournament']], 'OR', { prefix: () => true, fuzzy: () => 1 });
    expect(hits[0]).toMatchObject({ id: 0, matches: ['tournament'] });
    const byId = new Map(hits.map((hit) => [hit.id, hit]));
    expect(byId.get(1)!.matches).toEqual(['tournaments']);
    expect(byId.get(2)!.matches).toEqual(['tournamant']);
    expect(hits[0]!.score).toBeGreaterThan(Math.max(byId.get(1)!.score, byId.get(2)!.score));
    // Two typos away is too far for a distance of 1.
    expect(ids(index.search([['tornamant']], 'OR', { fuzzy: () => 1 }))).toEqual([2]);
    expect(ids(index.search([['tournament']], 'OR'))).toEqual([0]);
    expect(ids(index.search([['tournament']], 'OR', { prefix: () => true, fuzzy: () => 1, filter: (id) => id !== 0 })).sort()).toEqual([1, 2]);
  });

  it('scores every document as BM25 computed by hand does, on a random corpus', () => {
    const words = ['hall', 'stage', 'panel', 'guest', 'music', 'anime', 'cosplay', 'games', 'art', 'writing', 'film', 'quiz'];
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const corpus: [string, string][] = Array.from({ length: 300 }, () => {
      const pick = (count: number) => Array.from({ length: count }, () => words[Math.floor(random() * words.length)]).join(' ');
      return [pick(1 + Math.floor(random() * 4)), pick(1 + Math.floor(random() * 20))];
    });
    const index = indexOf(corpus, { title: 2 });
    const distinct = (text: string) => new Set(tokenize(text)).size;
    const average = [0, 1].map((field) => corpus.reduce((sum, document) => sum + distinct(document[field]!), 0) / corpus.length);
    for (const term of ['quiz', 'anime', 'hall']) {
      const expected = new Map<number, number>();
      [0, 1].forEach((field) => {
        const holding = corpus.filter((document) => tokenize(document[field]!).includes(term)).length;
        if (holding === 0) return;
        const idf = Math.log(1 + (corpus.length - holding + 0.5) / (holding + 0.5));
        corpus.forEach((document, id) => {
          const frequency = tokenize(document[field]!).filter((word) => word === term).length;
          if (frequency === 0) return;
          const length = distinct(document[field]!);
          const bm25 = idf * (0.5 + (frequency * 2.2) / (frequency + 1.2 * (1 - 0.7 + (0.7 * length) / average[field]!)));
          expected.set(id, (expected.get(id) ?? 0) + bm25 * (field === 0 ? 2 : 1));
        });
      });
      const hits = index.search([[term]], 'OR');
      expect(hits).toHaveLength(expected.size);
      for (const hit of hits) expect(hit.score, `${term} in document ${hit.id}`).toBeCloseTo(expected.get(hit.id)!, 9);
    }
  });

  it('takes no document once sealed', () => {
    const index = indexOf(documents);
    expect(() => index.add(['Late addition', ''])).toThrow('sealed');
  });
});
