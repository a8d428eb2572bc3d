// Cell.g4 - grammar of the cell language (docs/cell-language.md).
//
// Newlines are plain whitespace; `;` may separate items. Expression
// precedence, highest first: call/paren/atom, `@` (right-assoc), unary `-`,
// `* /`, `+ -`. In ANTLR's left-recursive rules the earlier alternative binds
// tighter. `split(e, n)` is an ordinary call here; the front end turns a
// statement whose whole right side is `split` into a split statement.
// A param's initialiser follows its shape (`param bf: [H] = 1`,
// `param U: [H, H] ~ orthogonal`).

grammar Cell;

file : cell* EOF ;

cell : 'cell' NAME '(' (decl (',' decl)*)? ')' '{' item* '}' ;

decl : NAME ':' shape ;

shape : '[' dim (',' dim)* ']' ;

dim : dimTerm (dimSum+=('+' | '-') dimTerm)* ;

dimTerm : INT ('*' NAME)?   # scaledDim
        | NAME              # symbolDim
        ;

item : 'state' decl (',' decl)*          # stateItem
     | 'param' paramDecl (',' paramDecl)*  # paramItem
     | 'output' target                   # outputItem
     | target (',' target)* '=' expr     # assignItem
     | ';'                               # emptyItem
     ;

// `= 1` sets a constant, `~ uniform(0.1)` draws; the front end checks
// which goes with which, so that `= orthogonal` gets a message, not a
// syntax error.
paramDecl : decl (initOp=('=' | '~') initValue)? ;

initValue : NAME ('(' (initNumber (',' initNumber)*)? ')')?  # schemeInit
          | initNumber                                       # numberInit
          ;

initNumber : '-'? (INT | FLOAT) ;

target : NAME | PRIMED ;

expr : NAME '(' (expr (',' expr)*)? ')'  # callExpr
     | '(' expr ')'                      # parenExpr
     | NAME                              # nameExpr
     | PRIMED                            # primedExpr
     | (INT | FLOAT)                     # numberExpr
     | <assoc=right> expr '@' expr       # matVecExpr
     | '-' expr                          # negExpr
     | expr op=('*' | '/') expr          # mulExpr
     | expr op=('+' | '-') expr          # addExpr
     ;

PRIMED : NAME_CHARS '\'' ;
NAME : NAME_CHARS ;
FLOAT : DIGITS '.' DIGITS? EXPONENT?
      | '.' DIGITS EXPONENT?
      | DIGITS EXPONENT
      ;
INT : DIGITS ;

COMMENT : '#' ~[\r\n]* -> skip ;
WS : [ \t\r\n]+ -> skip ;

fragment NAME_CHARS : [A-Za-z_] [A-Za-z0-9_]* ;
fragment DIGITS : [0-9]+ ;
fragment EXPONENT : [eE] [+-]? DIGITS ;
