/**
 * The key a tool call's input is kept under when the model sent text that is not a JSON object:
 * the model client keeps the reply, and the call is answered with an error naming the problem.
 */
export const UNPARSED_INPUT = 'kiln_unparsed_input';
