/**
 * English function words that carry no meaning for finding a tool: articles, pronouns, auxiliaries,
 * prepositions, conjunctions, plus the politeness and filler of a request ("please", "could you help me",
 * "provide … based on … using …").
 * Content words, even frequent ones ("get", "file", "data"), are left to the index's IDF.
 */
const words = `
a an the this that these those there here it its it's they them their theirs we us our ours you your yours
i me my mine he him his she her hers one ones
is are was were be been being am do does did doing done have has had having will would shall should can could
may might must
of in on at to for from by with without about via into onto over under between through during before after above
below up down out off again further then once than too very so such both each few more most other some any
all no nor not only own same just also etc
and or but if because as until while whether either neither
what which who whom whose when where why how
please help want need let lets know tell give provide based related using use according including various different specific certain detailed
`;

const STOP_WORDS: ReadonlySet<string> = new Set(words.split(/\s+/).filter((word) => word.length > 0));

export function isStopWord(lowerCaseWord: string): boolean {
  return STOP_WORDS.has(lowerCaseWord);
}
